// fractional_max_pool_grad.wgsl's sums, stored element by element (any dx strides; those of
// a run past the row's end left out).
fn store_sums(at: u32, w: u32, sums: vec4<f32>) {
    dx_store(at, from_f32(sums.x));
    if (RUN == 1u) { return; }
    if (w + 1u < params.in_w) { dx_store(at + params.dx_w, from_f32(sums.y)); }
    if (w + 2u < params.in_w) { dx_store(at + 2u * params.dx_w, from_f32(sums.z)); }
    if (w + 3u < params.in_w) { dx_store(at + 3u * params.dx_w, from_f32(sums.w)); }
}

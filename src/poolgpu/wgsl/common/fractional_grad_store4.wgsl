// fractional_max_pool_grad.wgsl's four sums in one store (poolgpu.kernels checks: dx
// contiguous along W, its other steps and start at multiples of 4 elements, in_w a multiple
// of 4).
fn store_sums(at: u32, w: u32, sums: vec4<f32>) {
    dx_store4(at, array<Raw, 4>(from_f32(sums.x), from_f32(sums.y), from_f32(sums.z), from_f32(sums.w)));
}

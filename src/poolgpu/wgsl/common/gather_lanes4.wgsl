// The block gathers' lanes (max_pool_grad.wgsl, average_pool_grad.wgsl) over channels-last
// tensors with C a multiple of 4 (CHANNELS_PER_LANE = 4): four neighbouring channels per
// invocation, dy read and dx written as 4-element chunks.
alias Sum = vec4<f32>;
alias SumBits = vec4<u32>;   // Sum's bits (average_pool_grad.wgsl's share_of)
fn dy_sum(e: u32) -> Sum {
    let v = dy_load4(e);
    return vec4<f32>(to_f32(v[0]), to_f32(v[1]), to_f32(v[2]), to_f32(v[3]));
}
fn dx_put(e: u32, s: Sum) { dx_store4(e, array<Raw, 4>(from_f32(s.x), from_f32(s.y), from_f32(s.z), from_f32(s.w))); }
fn gather_put(e: u32, s: Sum, me: u32, part: u32) { dx_put(e, s); }   // (never split: common/gather_lanes1.wgsl)

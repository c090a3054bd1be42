// The block gathers' lanes (max_pool_grad.wgsl, average_pool_grad.wgsl): one channel per
// invocation, dy read and dx written element by element.  (common/gather_lanes4.wgsl: four.)
alias Sum = f32;
alias SumBits = u32;   // Sum's bits (average_pool_grad.wgsl's share_of)
fn dy_sum(e: u32) -> Sum { return to_f32(dy_load(e)); }
fn dx_put(e: u32, s: Sum) { dx_store(e, from_f32(s)); }

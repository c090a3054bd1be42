// The block gathers' lanes (max_pool_grad.wgsl, average_pool_grad.wgsl): one channel per
// invocation, dy read and dx written element by element.  (common/gather_lanes4.wgsl: four.)
alias Sum = f32;
alias SumBits = u32;   // Sum's bits (average_pool_grad.wgsl's share_of)
fn dy_sum(e: u32) -> Sum { return to_f32(dy_load(e)); }
fn dx_put(e: u32, s: Sum) { dx_store(e, from_f32(s)); }
// dx element `me`'s sum, stored at e, or in a split gather (common/windows_covering.wgsl's
// PARTS) saved as part `part` of it.
fn gather_put(e: u32, s: Sum, me: u32, part: u32) {
    if (PARTS > 1u) {
        part_word_store(params.part_base + me * PARTS + part, bitcast<u32>(s));
        return;
    }
    dx_put(e, s);
}

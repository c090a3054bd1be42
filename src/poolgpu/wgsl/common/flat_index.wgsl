// Invocations numbered 0, 1, ... over a grid made by kernels.flat_grid (workgroups folded
// over x and y).  The padding invocations of the last groups get `total` (out of range).
fn flat_index(wg: vec3<u32>, groups: vec3<u32>, lane: u32, wg_x: u32, total: u32) -> u32 {
    let group = wg.y * groups.x + wg.x;
    // Groups are compared first, so that nothing overflows when `total` is near 2^32.
    if (group > (total - 1u) / wg_x || lane >= total - group * wg_x) { return total; }
    return group * wg_x + lane;
}

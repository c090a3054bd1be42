// The four windows' dy of a block of the one-pass disjoint max gradient over rows
// (max_pool_grad_disjoint_rows.wgsl), element by element: any dy layout.  Windows past
// out_w read its last one (their dx elements get zero).  (disjoint_rows_dy4.wgsl: a chunk.)
fn four_dy(dy_row: u32, ow0: u32) -> array<Raw, 4> {
    let last = params.out_w - 1u;
    return array<Raw, 4>(
        dy_load(dy_row + min(ow0, last) * params.dy_w), dy_load(dy_row + min(ow0 + 1u, last) * params.dy_w),
        dy_load(dy_row + min(ow0 + 2u, last) * params.dy_w), dy_load(dy_row + min(ow0 + 3u, last) * params.dy_w));
}

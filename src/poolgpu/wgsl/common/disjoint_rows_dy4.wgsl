// The four windows' dy of a block of the one-pass disjoint max gradient over rows
// (max_pool_grad_disjoint_rows.wgsl) as one 4-element chunk.  Requires (poolgpu.kernels checks):
// dy contiguous along W, its rows and start at multiples of 4 elements, out_w a multiple of
// 4; a block past out_w reads the row's last chunk (its dx elements get zero).
// (disjoint_rows_dy1.wgsl: element by element.)
fn four_dy(dy_row: u32, ow0: u32) -> array<Raw, 4> {
    return dy_load4(dy_row + min(ow0, params.out_w - 4u));
}

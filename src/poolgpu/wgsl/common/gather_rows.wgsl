// What the row gathers of the gradients (max_pool_grad_rows.wgsl, average_pool_grad_rows.wgsl)
// share.  One invocation computes four neighbouring dx elements along W, w0 .. w0 + 3, of
// one (n, c, d, h); it visits the window rows (kd, kh) that can cover them and, in each,
// the NOW output columns ow_first + NOW - 1 down to ow_first whose windows can reach
// [w0, w0 + 3] (kernels.py sizes NOW): so each dy (and argmax) read serves four dx
// elements, and dx is stored four at a time.  Windows are visited in the order of the block
// gathers (kd, kh ascending, ow descending: kw ascending), so both give the same bits.
//
// Requires (kernels.py checks): dx contiguous along W, rows and start at multiples of 4
// elements, in_w a multiple of 4.  Grid (common/grid.wgsl): (w0 / 4, h, (n, c, d)).

override NOW: u32 = 1u;   // output columns whose windows can reach four dx elements

// The output coordinate o whose window's tap k lands on input position p, when there is
// one (o * stride - pad + k * dilation = p, 0 <= o < count).
struct Hit { o: u32, hit: bool }
fn window_of(p: u32, k: u32, stride: u32, dilation: u32, pad: u32, count: u32) -> Hit {
    let num = i32(p + pad) - i32(k * dilation);
    return Hit(u32(num) / stride, num >= 0 && u32(num) % stride == 0u && u32(num) / stride < count);
}

// The first output column whose window can reach input column w0 (its last tap).
fn first_column(w0: u32) -> u32 {
    let num = i32(w0 + PW) - i32((KW - 1u) * LW);
    return select(0u, (u32(num) + SW - 1u) / SW, num > 0);
}

// The four dx elements this invocation computes: (n, c, d, h) and the first column w0;
// `inside` false past the grid's end.  Reads the Params fields columns, in_d and channels.
struct DxQuad { n: u32, c: u32, nc: u32, d: u32, h: u32, w0: u32, inside: bool }
fn dx_quad(wg: vec3<u32>, lid: vec3<u32>) -> DxQuad {
    let pos = grid_position(wg, lid);
    let nc = pos.z / params.in_d;
    return DxQuad(nc / params.channels, nc % params.channels, nc, pos.z % params.in_d, pos.y, 4u * pos.x,
                  pos.x < params.columns);
}

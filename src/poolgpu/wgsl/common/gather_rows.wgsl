// What the row gathers of the gradients (max_pool_grad_rows.wgsl, average_pool_grad_rows.wgsl)
// share.  One invocation computes eight neighbouring dx elements along W, w0 .. w0 + 7, of
// one (n, c, d, h); it visits the window rows (kd, kh) that can cover them and, in each,
// the dy (and argmax) columns of DY_CHUNKS aligned 4-element chunks, from the last down to
// the one holding the first column whose window can reach w0 (kernels.py sizes DY_CHUNKS
// so that they hold every window reaching [w0, w0 + 7]): each 16-byte load serves eight dx
// elements, and dx is stored four at a time.  Loads, not arithmetic, bound these gathers
// on SIMD CPU adapters: scalar loads of each reaching column, four dx elements per
// invocation, were 2x slower.  Windows are visited in the order of the block gathers (kd,
// kh ascending, ow descending: kw ascending), so both give the same bits.
//
// Requires (kernels.py checks): dx contiguous along W, rows and start at multiples of 4
// elements, in_w a multiple of 4; dy (and the argmax) likewise, out_w a multiple of 4.
// Grid (common/grid.wgsl): (w0 / 8, h, (n, c, d)).

override DY_CHUNKS: u32 = 1u;

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

// The eight dx elements this invocation computes: (n, c, d, h) and the first column w0;
// `inside` false past the grid's end.  Reads the Params fields columns, in_d and channels.
struct DxBlock { n: u32, c: u32, nc: u32, d: u32, h: u32, w0: u32, inside: bool }
fn dx_block(wg: vec3<u32>, lid: vec3<u32>) -> DxBlock {
    let pos = grid_position(wg, lid);
    let nc = pos.z / params.in_d;
    return DxBlock(nc / params.channels, nc % params.channels, nc, pos.z % params.in_d, pos.y, 8u * pos.x,
                   pos.x < params.columns);
}

// The sums of dx elements w0 .. w0 + 3 (lo) and w0 + 4 .. w0 + 7 (hi).
struct Eight { lo: vec4<f32>, hi: vec4<f32> }

// `value` added to the elements whose mask is set.
fn add_where(sums: Eight, value: f32, lo: vec4<bool>, hi: vec4<bool>) -> Eight {
    return Eight(sums.lo + select(vec4<f32>(0.0), vec4<f32>(value), lo),
                 sums.hi + select(vec4<f32>(0.0), vec4<f32>(value), hi));
}

// The eight sums stored at dx_row + w0 (the second four only inside the row: in_w may be
// 4 more than a multiple of 8).
fn store_eight(dx_row: u32, w0: u32, sums: Eight) {
    let lo = sums.lo;  let hi = sums.hi;
    dx_store4(dx_row + w0, array<Raw, 4>(from_f32(lo.x), from_f32(lo.y), from_f32(lo.z), from_f32(lo.w)));
    if (w0 + 4u < params.in_w) {
        dx_store4(dx_row + w0 + 4u, array<Raw, 4>(from_f32(hi.x), from_f32(hi.y), from_f32(hi.z), from_f32(hi.w)));
    }
}

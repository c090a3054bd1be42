// Average pooling gradient (DirectML AVERAGE_POOLING_GRAD) when dx and dy are contiguous
// along W: the gather of average_pool_grad.wgsl, 2 x 8 dx elements per invocation from
// 4-element chunks of dy (see common/gather_rows.wgsl).  Each dx element sums, in a fixed
// order, dy / divisor of the windows covering it (the divisor: the window's size when
// padding counts, else the number of input elements it covers).
//
// Prepended by poolgpu.kernels: the value type (Raw, to_f32, from_f32) and the tensors
// dy (dy_load4) and dx; library: grid.wgsl, average_divisor.wgsl, gather_rows.wgsl and its
// store_eight (gather_rows_store4.wgsl or gather_rows_store_any.wgsl).

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

// What the gathers need of one window row (see common/gather_rows.wgsl).
struct WindowRow {
    dy: u32,                    // the row's first dy element
    w0: u32, last_chunk: i32,   // the invocation's first dx column; the row's last chunk
    count_d: u32, count_h: u32,   // the input planes (D) and rows its windows cover
    in_first: bool, in_second: bool,   // whether its windows reach dx row h0, h0 + 1
}

// (a column outside the row is no window: `real` false)
struct Chunk { dy: array<Raw, 4>, ow0: u32, real: vec4<bool> }
fn load_chunk(row: WindowRow, j: u32) -> Chunk {
    let place = chunk_place(row.w0, j, row.last_chunk);
    return Chunk(dy_load4(row.dy + place.at), u32(place.first_window), columns_in_row(place));
}

// Whether window column ow's taps reach input column w (w = ow * SW - PW + kw * LW).
fn covers(ow: u32, w: u32) -> bool {
    return is_tap(i32(w + PW) - i32(ow * SW), LW, KW);
}

// Window column k of the chunk (ow): its share (dy over the divisor of its planes and rows,
// count_d and count_h, and of its columns) added to the dx elements it covers.
fn gather_column(sums: Sixteen, row: WindowRow, chunk: Chunk, j: u32, k: u32) -> Sixteen {
    let ow = chunk.ow0 + k;
    // kept as written (common/as_written.wgsl): the same rounding as average_pool_grad.wgsl's share_of
    let divisor = window_divisor(row.count_d, row.count_h, divisor_taps(ow, KW, SW, LW, PW, params.in_w, EW));
    let share = as_written(to_f32(chunk.dy[k]) / divisor);
    var covered = columns_reached(j, k);   // with FIXED_COLUMNS, constants; else computed:
    if (!FIXED_COLUMNS) {
        let w0 = row.w0;
        covered = Reach(vec4<bool>(covers(ow, w0), covers(ow, w0 + 1u), covers(ow, w0 + 2u), covers(ow, w0 + 3u)),
                        vec4<bool>(covers(ow, w0 + 4u), covers(ow, w0 + 5u), covers(ow, w0 + 6u), covers(ow, w0 + 7u)));
    }
    let real = vec4<bool>(chunk.real[k]);
    var s = sums;
    // (uniform branches: the same for every lane along W, skipping a row the window row misses)
    if (row.in_first) { s.first = add_where(s.first, share, covered.lo & real, covered.hi & real); }
    if (row.in_second) { s.second = add_where(s.second, share, covered.lo & real, covered.hi & real); }
    return s;
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let block = dx_block(wg, lid);
    if (!block.inside) { return; }
    let n = block.n;  let c = block.c;
    let d = block.d;  let h0 = block.h0;  let w0 = block.w0;

    let last_chunk = dy_last_chunk();
    let last_row = last_window_row(h0);
    // (sums from 0 kept as written: 0 + -0 is +0, which folding 0 + v to v loses)
    let zero = Eight(vec4<f32>(as_written(0.0)), vec4<f32>(as_written(0.0)));
    var sums = Sixteen(zero, zero);
    for (var kd = 0u; kd < KD; kd++) {
        let od = window_of(d, kd, SD, LD, PD, params.out_d);
        if (!od.hit) { continue; }
        let count_d = divisor_taps(od.o, KD, SD, LD, PD, params.in_d, ED);
        for (var i = 0; i < i32(OH_ROWS); i++) {
            let oh = last_row - i;
            if (oh < 0 || oh >= i32(params.out_h)) { continue; }
            let count_h = divisor_taps(u32(oh), KH, SH, LH, PH, params.in_h, EH);
            let dy_row = params.dy_base + n * params.dy_n + c * params.dy_c + od.o * params.dy_d + u32(oh) * params.dy_h;
            sums = visit_chunks(sums, WindowRow(dy_row, w0, last_chunk, count_d, count_h,
                                                covers_row(u32(oh), h0), covers_row(u32(oh), h0 + 1u)));
        }
    }
    store_sixteen(params.dx_base + n * params.dx_n + c * params.dx_c + d * params.dx_d + h0 * params.dx_h,
                  params.dx_h, h0, w0, sums);
}

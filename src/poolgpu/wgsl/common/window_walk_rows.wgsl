// The window walk for rows contiguous along W (see window_geometry.wgsl): one invocation
// computes four neighbouring outputs of a row, ow0 = 4 * column .. ow0 + 3.  Each window
// row they share is read once, as aligned chunks of four elements (one 16-byte load for
// 32-bit types), and each element is prepared once (tap_of) for every tap that uses it.
//
// Requires (kernels.py checks): x and y (and idx) contiguous along W, with rows and the
// tensors' starts at multiples of 4 elements; out_w a multiple of 4; a span of at most
// MAX_CHUNKS chunks.

// Outputs ow0.. start at column ow0 * SW - PW; ow0 * SW is a multiple of 4, so the span's
// first element sits LEAD = -PW mod 4 elements into its first chunk, for every invocation;
// the span is CHUNKS = (LEAD + 3 * SW + (KW - 1) * LW) / 4 + 1 chunks, at most 8 (kernels.py
// computes both: naga 29 miscompiles override expressions derived from other overrides).
override LEAD: u32 = 0u;
override CHUNKS: u32 = 1u;

// The tap at column `col` of a window row (`row_inside`: the row is input data).
fn row_tap(acc: Acc, t: Tap, col: i32, row_inside: bool, logical_row: u32) -> Acc {
    let inside = row_inside && (!PADDED || (col >= 0 && col < i32(params.in_w)));
    return acc_add(acc, t, logical_row + u32(col), inside);
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let pos = grid_position(wg, lid);   // (ow0 / 4, oh, (n, c, od))
    if (pos.x >= params.columns) { return; }
    let ow0 = 4u * pos.x;
    let oh = pos.y;
    let od = pos.z % params.out_d;
    let nc = pos.z / params.out_d;
    let n = nc / params.channels;
    let c = nc % params.channels;

    let x_plane = params.x_base + n * params.x_n + c * params.x_c;
    let logical_plane = nc * params.in_d * params.in_h * params.in_w;
    let d0 = i32(od * SD) - i32(PD);
    let h0 = i32(oh * SH) - i32(PH);
    let first = i32(ow0 * SW) - i32(PW) - i32(LEAD);       // column of the span's first element
    let last_chunk = i32((params.in_w - 1u) / 4u);

    var acc = array<Acc, 4>(acc_new(), acc_new(), acc_new(), acc_new());
    for (var kd = 0u; kd < KD; kd++) {
        let d = coord(d0, kd, LD, params.in_d);
        for (var kh = 0u; kh < KH; kh++) {
            let h = coord(h0, kh, LH, params.in_h);
            let row = x_plane + d.at * params.x_d + h.at * params.x_h;
            let logical_row = logical_plane + (d.at * params.in_h + h.at) * params.in_w;
            var span: array<Tap, 32>;   // 4 * MAX_CHUNKS
            for (var j = 0u; j < CHUNKS; j++) {
                // chunks before or past the row are clamped into it: their taps are padding
                let chunk = x_load4(row + 4u * u32(clamp(first / 4 + i32(j), 0, last_chunk)));
                // (the four lanes written out, and the four outputs below: lavapipe's LLVM
                // then unrolls the loops and keeps `span` in registers, twice as fast)
                span[4u * j] = tap_of(chunk[0]);
                span[4u * j + 1u] = tap_of(chunk[1]);
                span[4u * j + 2u] = tap_of(chunk[2]);
                span[4u * j + 3u] = tap_of(chunk[3]);
            }
            let row_inside = d.inside && h.inside;
            for (var kw = 0u; kw < KW; kw++) {
                let e = LEAD + kw * LW;   // output v's tap kw is span element e + v * SW
                acc[0] = row_tap(acc[0], span[e], first + i32(e), row_inside, logical_row);
                acc[1] = row_tap(acc[1], span[e + SW], first + i32(e + SW), row_inside, logical_row);
                acc[2] = row_tap(acc[2], span[e + 2u * SW], first + i32(e + 2u * SW), row_inside, logical_row);
                acc[3] = row_tap(acc[3], span[e + 3u * SW], first + i32(e + 3u * SW), row_inside, logical_row);
            }
        }
    }
    // (array values built in place: naga rejects a `var` array passed by value)
    let values = array<Raw, 4>(
        acc_value(acc[0], Out(n, c, od, oh, ow0 + 0)),
        acc_value(acc[1], Out(n, c, od, oh, ow0 + 1)),
        acc_value(acc[2], Out(n, c, od, oh, ow0 + 2)),
        acc_value(acc[3], Out(n, c, od, oh, ow0 + 3)));
    let indices = array<u32, 4>(acc_index(acc[0]), acc_index(acc[1]), acc_index(acc[2]), acc_index(acc[3]));
    let at = Out(n, c, od, oh, ow0);
    y_store4(y_offset(at), values);
    idx_store4_index(idx_offset(at), indices);
}

// The window walk for tensors contiguous along C (channels last: NHWC, NDHWC, NWC; see
// window_geometry.wgsl): one invocation computes four neighbouring channels c0 .. c0 + 3
// of a block of ROWS x COLS output positions (oh0 + a, ow0 + b; each 1 or 2), reading each
// input position's four channels at once (one 16-byte load for 32-bit types) and feeding
// it to every output of the block whose window holds it: overlapping windows (3x3 stride 2:
// a row and a column in three) share their loads.
//
// Requires (poolgpu.kernels checks): x and y (and idx) contiguous along C, positions and the
// tensors' starts at multiples of 4 elements; C a multiple of 4.

override ROWS: u32 = 1u;
override COLS: u32 = 1u;
// The input rows and columns of a block's windows written out (Tuning.channels_written_out,
// where they are at most 6 each), so that a lane's loads are in flight together; else loops
// (on lavapipe no slower: LLVM unrolls them).  The same taps in the same order either way.
override WRITTEN_OUT: bool = false;

// The block's outputs' accumulators: output (oh0 + a, ow0 + b) in a<a><b>.
struct Block { a00: array<Acc, 4>, a01: array<Acc, 4>, a10: array<Acc, 4>, a11: array<Acc, 4> }

// One input position's four channels into the four channels' accumulators of an output.
fn four_channels(acc: array<Acc, 4>, chunk: array<Raw, 4>, index: u32, plane_size: u32, inside: bool) -> array<Acc, 4> {
    return array<Acc, 4>(
        acc_add(acc[0], tap_of(chunk[0]), index, inside),
        acc_add(acc[1], tap_of(chunk[1]), index + plane_size, inside),
        acc_add(acc[2], tap_of(chunk[2]), index + 2u * plane_size, inside),
        acc_add(acc[3], tap_of(chunk[3]), index + 3u * plane_size, inside));
}

fn store_channels(acc: array<Acc, 4>, at: Out) {
    // (array values built in place: naga rejects a `var` array passed by value)
    let values = array<Raw, 4>(
        acc_value(acc[0], at),
        acc_value(acc[1], Out(at.n, at.c + 1u, at.d, at.h, at.w)),
        acc_value(acc[2], Out(at.n, at.c + 2u, at.d, at.h, at.w)),
        acc_value(acc[3], Out(at.n, at.c + 3u, at.d, at.h, at.w)));
    let indices = array<u32, 4>(acc_index(acc[0]), acc_index(acc[1]), acc_index(acc[2]), acc_index(acc[3]));
    y_store4(y_offset(at), values);
    idx_store4_index(idx_offset(at), indices);
}

// Whether tap offset `t` (input position minus the block's first window's start) is a tap of
// the block's output `o` along a dimension of window `taps`, stride and dilation.
fn tap_of_output(t: u32, o: u32, stride: u32, dilation: u32, taps: u32) -> bool {
    return t >= o * stride && (t - o * stride) % dilation == 0u && (t - o * stride) / dilation < taps;
}

// The input rows and columns the block's windows span, from its first window's start.
fn row_span() -> u32 { return (ROWS - 1u) * SH + (KH - 1u) * LH + 1u; }
fn column_span() -> u32 { return (COLS - 1u) * SW + (KW - 1u) * LW + 1u; }

// Where a block reads: its input plane (the first channel's element at d), that plane's
// flat logical index, whether d is inside, the windows' start along H and W.
struct Rows { x_plane: u32, logical_plane: u32, inside: bool, h0: i32, w0: i32, plane_size: u32 }

// Row r of the span: each of its columns fed to the block's outputs whose windows hold it.
fn block_row(b: Block, at: Rows, r: u32) -> Block {
    if (r >= row_span()) { return b; }
    let row0 = tap_of_output(r, 0u, SH, LH, KH);
    let row1 = ROWS == 2u && tap_of_output(r, 1u, SH, LH, KH);
    if (!row0 && !row1) { return b; }
    let h = coord(at.h0, r, 1u, params.in_h);
    let row = Row(at.x_plane + h.at * params.x_h, at.logical_plane + h.at * params.in_w, at.inside && h.inside,
                  row0, row1, at.w0, at.plane_size);
    var a = b;
    if (WRITTEN_OUT) {
        a = block_tap(a, row, 0u);
        a = block_tap(a, row, 1u);
        a = block_tap(a, row, 2u);
        a = block_tap(a, row, 3u);
        a = block_tap(a, row, 4u);
        a = block_tap(a, row, 5u);
        return a;
    }
    for (var q = 0u; q < column_span(); q++) { a = block_tap(a, row, q); }
    return a;
}

// A row of the span: its first element in x and flat logical index, whether it is inside,
// which of the block's output rows' windows hold it.
struct Row { x_row: u32, logical_row: u32, inside: bool, row0: bool, row1: bool, w0: i32, plane_size: u32 }

// Column q of the row: its four channels fed to the block's outputs whose windows hold it.
fn block_tap(b: Block, row: Row, q: u32) -> Block {
    if (q >= column_span()) { return b; }
    let col0 = tap_of_output(q, 0u, SW, LW, KW);
    let col1 = COLS == 2u && tap_of_output(q, 1u, SW, LW, KW);
    if (!col0 && !col1) { return b; }
    let w = coord(row.w0, q, 1u, params.in_w);
    let chunk = x_load4(row.x_row + w.at * params.x_w);
    let index = row.logical_row + w.at;   // channel c0's
    let inside = row.inside && w.inside;
    var a = b;
    if (row.row0 && col0) { a.a00 = four_channels(a.a00, chunk, index, row.plane_size, inside); }
    if (row.row0 && col1) { a.a01 = four_channels(a.a01, chunk, index, row.plane_size, inside); }
    if (row.row1 && col0) { a.a10 = four_channels(a.a10, chunk, index, row.plane_size, inside); }
    if (row.row1 && col1) { a.a11 = four_channels(a.a11, chunk, index, row.plane_size, inside); }
    return a;
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let pos = grid_position(wg, lid);   // (c0 / 4, ow0 / COLS, (n, od, oh0 / ROWS))
    if (pos.x >= params.columns) { return; }
    let c0 = 4u * pos.x;
    let ow0 = COLS * pos.y;
    let row_blocks = (params.out_h + ROWS - 1u) / ROWS;
    let oh0 = ROWS * (pos.z % row_blocks);
    let od = (pos.z / row_blocks) % params.out_d;
    let n = pos.z / (row_blocks * params.out_d);

    let x_start = params.x_base + n * params.x_n + c0;
    let plane_size = params.in_d * params.in_h * params.in_w;
    let logical_start = (n * params.channels + c0) * plane_size;
    let d0 = i32(od * SD) - i32(PD);
    let h0 = i32(oh0 * SH) - i32(PH);
    let w0 = i32(ow0 * SW) - i32(PW);

    let fresh = array<Acc, 4>(acc_new(), acc_new(), acc_new(), acc_new());
    var b = Block(fresh, fresh, fresh, fresh);
    for (var kd = 0u; kd < KD; kd++) {
        let d = coord(d0, kd, LD, params.in_d);
        let at = Rows(x_start + d.at * params.x_d, logical_start + d.at * params.in_h * params.in_w, d.inside, h0, w0,
                      plane_size);
        if (WRITTEN_OUT) {
            b = block_row(b, at, 0u);
            b = block_row(b, at, 1u);
            b = block_row(b, at, 2u);
            b = block_row(b, at, 3u);
            b = block_row(b, at, 4u);
            b = block_row(b, at, 5u);
            continue;
        }
        for (var r = 0u; r < row_span(); r++) { b = block_row(b, at, r); }
    }
    store_channels(b.a00, Out(n, c0, od, oh0, ow0));
    let second_col = COLS == 2u && ow0 + 1u < params.out_w;
    let second_row = ROWS == 2u && oh0 + 1u < params.out_h;
    if (second_col) { store_channels(b.a01, Out(n, c0, od, oh0, ow0 + 1u)); }
    if (second_row) { store_channels(b.a10, Out(n, c0, od, oh0 + 1u, ow0)); }
    if (second_row && second_col) { store_channels(b.a11, Out(n, c0, od, oh0 + 1u, ow0 + 1u)); }
}

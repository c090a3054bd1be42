// The window walk for rows contiguous along W (see window_geometry.wgsl): one invocation
// computes four neighbouring outputs of ROWS (1 to 4) output rows, ow0 = 4 * column ..
// ow0 + 3 of rows oh0 = ROWS * line ...  Each input row they share is read once, as aligned
// chunks of four elements (one 16-byte load for 32-bit types), and each element is
// prepared once (tap_of) for every tap that uses it: the input rows that neighbouring
// output rows' windows share (3x3 stride 2: one in three) are read once for both.  Loads
// per output, not arithmetic, bound this walk on lavapipe (3x3 stride 2 max with its loads
// replaced by arithmetic ran at the copy's speed); four rows instead of two made it 1.1x
// faster, eight outputs along W (register spills) 5% slower.  (The rows are written out as
// acc0..acc3: in an array indexed by a loop, lavapipe keeps them in memory, 2x slower.)
//
// Requires (poolgpu.kernels checks): x contiguous along W, with rows and the tensor's start at
// multiples of 4 elements (PAIRED: 8, and in_w a multiple of 8); a span of at most 8
// chunks.  The four outputs are stored by store_four: common/rows_store4.wgsl where y (and
// idx) meet x's requirements and out_w is a multiple of 4, else common/rows_store_tail.wgsl.

override ROWS: u32 = 1u;

// Outputs ow0.. start at column ow0 * SW - PW; ow0 * SW is a multiple of 4, so the span's
// first element sits LEAD = -PW mod 4 elements into its first chunk, for every invocation;
// the span is CHUNKS = (LEAD + 3 * SW + (KW - 1) * LW) / 4 + 1 chunks, at most 8 (poolgpu.kernels
// computes both: naga 29 miscompiles override expressions derived from other overrides).
override LEAD: u32 = 0u;
override CHUNKS: u32 = 1u;

// 16-bit x (PAIRED) is read as pairs of chunks, eight elements per 16-byte load: the span's
// chunks come from PAIRS pairs, the first holding its first chunk as its second half where
// that chunk is odd (PARITY 1: in every invocation, 2: in some; poolgpu.kernels computes both).
// Half the loads of 4-element chunks: float16 max 1.2-1.3x faster on lavapipe.
override PAIRED: bool = false;
override PARITY: u32 = 0u;
override PAIRS: u32 = 1u;

// The span's chunks c0 .. c0 + CHUNKS - 1 from pairs of chunks (x rows hold whole pairs).
fn fill_span_paired(span: ptr<function, array<Tap, 32>>, row: u32, c0: i32) {
    let first_pair = c0 >> 1u;   // (floor: c0 may be negative)
    let last_pair = i32(params.in_w / 8u) - 1;
    var pairs: array<array<Raw, 8>, 5>;   // 8 chunks, from an odd one
    for (var p = 0u; p < PAIRS; p++) {
        // pairs before or past the row are clamped into it: their taps are padding
        pairs[p] = x_load8(row + 8u * u32(clamp(first_pair + i32(p), 0, last_pair)));
    }
    let odd = select(PARITY == 1u, (c0 & 1) != 0, PARITY == 2u);
    for (var j = 0u; j < CHUNKS; j++) {
        // chunk c0 + j: in pair j / 2 (c0 even) or (j + 1) / 2 (c0 odd), half by parity
        let even_at = 4u * (j % 2u);
        let odd_at = 4u * ((j + 1u) % 2u);
        for (var l = 0u; l < 4u; l++) {
            (*span)[4u * j + l] = tap_of(select(pairs[j / 2u][even_at + l], pairs[(j + 1u) / 2u][odd_at + l], odd));
        }
    }
}

// The tap at column `col` of a window row (`row_inside`: the row is input data).
fn row_tap(acc: Acc, t: Tap, col: i32, row_inside: bool, logical_row: u32) -> Acc {
    let inside = row_inside && (!PADDED || (col >= 0 && col < i32(params.in_w)));
    return acc_add(acc, t, logical_row + u32(col), inside);
}

// Four outputs' taps kw from the prepared span of one input row.
fn four_taps(acc: array<Acc, 4>, span: ptr<function, array<Tap, 32>>, first: i32, row_inside: bool,
             logical_row: u32) -> array<Acc, 4> {
    var a = acc;
    for (var kw = 0u; kw < KW; kw++) {
        let e = LEAD + kw * LW;   // output v's tap kw is span element e + v * SW
        a[0] = row_tap(a[0], (*span)[e], first + i32(e), row_inside, logical_row);
        a[1] = row_tap(a[1], (*span)[e + SW], first + i32(e + SW), row_inside, logical_row);
        a[2] = row_tap(a[2], (*span)[e + 2u * SW], first + i32(e + 2u * SW), row_inside, logical_row);
        a[3] = row_tap(a[3], (*span)[e + 3u * SW], first + i32(e + 3u * SW), row_inside, logical_row);
    }
    return a;
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let pos = grid_position(wg, lid);   // (ow0 / 4, oh0 / ROWS, (n, c, od))
    if (pos.x >= params.columns) { return; }
    let ow0 = 4u * pos.x;
    let oh0 = ROWS * pos.y;
    let od = pos.z % params.out_d;
    let nc = pos.z / params.out_d;
    let n = nc / params.channels;
    let c = nc % params.channels;

    let x_plane = params.x_base + n * params.x_n + c * params.x_c;
    let logical_plane = nc * params.in_d * params.in_h * params.in_w;
    let d0 = i32(od * SD) - i32(PD);
    let h0 = i32(oh0 * SH) - i32(PH);
    let first = i32(ow0 * SW) - i32(PW) - i32(LEAD);       // column of the span's first element
    let last_chunk = i32((params.in_w - 1u) / 4u);

    var acc0 = array<Acc, 4>(acc_new(), acc_new(), acc_new(), acc_new());   // output row oh0
    var acc1 = acc0;                                                          // oh0 + 1 (ROWS >= 2)
    var acc2 = acc0;                                                          // oh0 + 2 (ROWS >= 3)
    var acc3 = acc0;                                                          // oh0 + 3 (ROWS = 4)
    for (var kd = 0u; kd < KD; kd++) {
        let d = coord(d0, kd, LD, params.in_d);
        // input row r of the window rows: output row oh0 + q's tap kh is r = q * SH + kh * LH
        for (var r = 0u; r < (ROWS - 1u) * SH + (KH - 1u) * LH + 1u; r++) {
            let for0 = row_tap_of(r, 0u);
            let for1 = ROWS >= 2u && row_tap_of(r, 1u);
            let for2 = ROWS >= 3u && row_tap_of(r, 2u);
            let for3 = ROWS >= 4u && row_tap_of(r, 3u);
            if (!(for0 || for1 || for2 || for3)) { continue; }
            let h = coord(h0, r, 1u, params.in_h);
            let row = x_plane + d.at * params.x_d + h.at * params.x_h;
            let logical_row = logical_plane + (d.at * params.in_h + h.at) * params.in_w;
            var span: array<Tap, 32>;   // 4 * 8 chunks
            if (PAIRED) { fill_span_paired(&span, row, first / 4); }
            for (var j = 0u; j < CHUNKS && !PAIRED; j++) {
                // chunks before or past the row are clamped into it: their taps are padding
                let chunk = x_load4(row + 4u * u32(clamp(first / 4 + i32(j), 0, last_chunk)));
                // (the four lanes written out, like the four outputs in four_taps: lavapipe's
                // LLVM then unrolls the loops and keeps `span` in registers, twice as fast)
                span[4u * j] = tap_of(chunk[0]);
                span[4u * j + 1u] = tap_of(chunk[1]);
                span[4u * j + 2u] = tap_of(chunk[2]);
                span[4u * j + 3u] = tap_of(chunk[3]);
            }
            let row_inside = d.inside && h.inside;
            if (for0) { acc0 = four_taps(acc0, &span, first, row_inside, logical_row); }
            if (for1) { acc1 = four_taps(acc1, &span, first, row_inside, logical_row); }
            if (for2) { acc2 = four_taps(acc2, &span, first, row_inside, logical_row); }
            if (for3) { acc3 = four_taps(acc3, &span, first, row_inside, logical_row); }
        }
    }
    store_four(acc0, Out(n, c, od, oh0, ow0));
    if (ROWS >= 2u && oh0 + 1u < params.out_h) { store_four(acc1, Out(n, c, od, oh0 + 1u, ow0)); }
    if (ROWS >= 3u && oh0 + 2u < params.out_h) { store_four(acc2, Out(n, c, od, oh0 + 2u, ow0)); }
    if (ROWS >= 4u && oh0 + 3u < params.out_h) { store_four(acc3, Out(n, c, od, oh0 + 3u, ow0)); }
}

// Whether input row r of the window rows is one of output row oh0 + q's taps.
fn row_tap_of(r: u32, q: u32) -> bool {
    return r >= q * SH && (r - q * SH) % LH == 0u && (r - q * SH) / LH < KH;
}

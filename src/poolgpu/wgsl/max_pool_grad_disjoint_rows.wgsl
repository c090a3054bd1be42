// Max pooling gradient where windows do not overlap (as max_pool_grad_disjoint.wgsl) and x
// and dx are contiguous along W: one invocation owns the dx elements of four neighbouring
// windows along W, a block of SD x SH x 4 * SW elements whose rows are SW aligned 4-element
// chunks, so x is read and dx written a chunk (or a pair of chunks) at a time (the block
// pass reads and writes element by element).  Same argmax rule, same bits.
//
// Requires (poolgpu.kernels checks): x and dx contiguous along W, with rows and the tensors'
// starts at multiples of 4 elements; in_w a multiple of 4 (dx rows are whole chunks); no
// start padding along W (window ow's taps start at column ow * SW); SW <= 8.
//
// Prepended by poolgpu.kernels: the value type (Raw, Key, key_of, key_gt) and the tensors x, dy
// and dx; library: window_constants.wgsl, windows_covering.wgsl (block_element, block_of),
// max_accumulator.wgsl, row_grid.wgsl, disjoint_gradient.wgsl (Params), and how a block
// row is read and written, fill_span(span, row, w0) and store_row(dx_row, me, w0, dy,
// winner): common/disjoint_rows_chunks.wgsl (4-element chunks) or, for 16-bit x and dx,
// common/disjoint_rows_pairs.wgsl (8 elements per 16-byte load and store); and how the
// four windows' dy are read, four_dy(dy_row, ow0): common/disjoint_rows_dy1.wgsl (element
// by element) or common/disjoint_rows_dy4.wgsl (one chunk).  Lavapipe makes each load and
// store lane by lane, so fewer and wider ones are what count there (case B, float16: pairs
// and one dy chunk 1.3-1.9x faster than chunks and dy element by element).

// Window v's tap at span element e (column w0 + e; inside the row unless past in_w: end padding).
fn tap(acc: Acc, span: ptr<function, array<Tap, 32>>, e: u32, w0: u32, row_inside: bool, logical_row: u32) -> Acc {
    return acc_add(acc, (*span)[e], logical_row + w0 + e, row_inside && w0 + e < params.in_w);
}

// Element e of a dx row of the block (from w0): its window's dy where it is the argmax, else zero.
fn dx_element(me: u32, e: u32, dy: array<Raw, 4>, winner: array<u32, 4>) -> Raw {
    return select(Raw(), dy[e / SW], me + e == winner[e / SW]);
}

// The loops over the span's chunks, its taps, the four windows and the stored chunks (here
// and in the row libraries) are written out as calls with constant arguments (up to SW = 8;
// those past SW or KW return at once), so that every index into span, acc, dy and winner is
// a constant and lavapipe keeps them in registers (GPUs too: arrays indexed by a loop
// variable live in local memory): left to loops, case B's gradient ran 1.5x slower on
// lavapipe (float32 and float16).

// The four windows' taps kw of the row.
fn four_taps(acc: array<Acc, 4>, span: ptr<function, array<Tap, 32>>, w0: u32, row_inside: bool, logical_row: u32,
             kw: u32) -> array<Acc, 4> {
    if (kw >= KW) { return acc; }
    let e = kw * LW;   // window v's tap kw is span element v * SW + e
    var a = acc;
    a[0] = tap(a[0], span, e, w0, row_inside, logical_row);
    a[1] = tap(a[1], span, SW + e, w0, row_inside, logical_row);
    a[2] = tap(a[2], span, 2u * SW + e, w0, row_inside, logical_row);
    a[3] = tap(a[3], span, 3u * SW + e, w0, row_inside, logical_row);
    return a;
}

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let block = block_of(wg, lane);
    if (!block.inside) { return; }
    let ow0 = 4u * block.w;   // the block's first window column
    let w0 = ow0 * SW;        // and its first dx column
    // The block's windows start where the block does: tap k is block element k * dilation.
    let od = block.d + PD / SD;
    let oh = block.h + PH / SH;
    let rows_have_windows = od < params.out_d && oh < params.out_h;
    let x_plane = params.x_base + block.n * params.x_n + block.c * params.x_c;
    let logical_plane = block.nc * params.in_d * params.in_h * params.in_w;

    var acc = array<Acc, 4>(acc_new(), acc_new(), acc_new(), acc_new());
    for (var kd = 0u; kd < KD; kd++) {
        let d = block_element(block.d, kd * LD, SD, PD, params.in_d);
        for (var kh = 0u; kh < KH; kh++) {
            let h = block_element(block.h, kh * LH, SH, PH, params.in_h);
            let row_inside = d.inside && h.inside;
            let row = x_plane + select(0u, d.at * params.x_d + h.at * params.x_h, row_inside);
            let logical_row = logical_plane + (d.at * params.in_h + h.at) * params.in_w;
            var span: array<Tap, 32>;   // 4 * SW elements
            fill_span(&span, row, w0);
            acc = four_taps(acc, &span, w0, row_inside, logical_row, 0u);
            acc = four_taps(acc, &span, w0, row_inside, logical_row, 1u);
            acc = four_taps(acc, &span, w0, row_inside, logical_row, 2u);
            acc = four_taps(acc, &span, w0, row_inside, logical_row, 3u);
            acc = four_taps(acc, &span, w0, row_inside, logical_row, 4u);
            acc = four_taps(acc, &span, w0, row_inside, logical_row, 5u);
            acc = four_taps(acc, &span, w0, row_inside, logical_row, 6u);
            acc = four_taps(acc, &span, w0, row_inside, logical_row, 7u);
        }
    }

    // Each window's dy goes to its argmax; the block's other elements get zero.
    let winner = array<u32, 4>(winner_of(acc[0], rows_have_windows && ow0 < params.out_w),
                               winner_of(acc[1], rows_have_windows && ow0 + 1u < params.out_w),
                               winner_of(acc[2], rows_have_windows && ow0 + 2u < params.out_w),
                               winner_of(acc[3], rows_have_windows && ow0 + 3u < params.out_w));
    let dy = four_dy(params.dy_base + block.n * params.dy_n + block.c * params.dy_c
                     + select(0u, od * params.dy_d + oh * params.dy_h, rows_have_windows), ow0);
    let dx_plane = params.dx_base + block.n * params.dx_n + block.c * params.dx_c;
    for (var rd = 0u; rd < SD; rd++) {
        let d = block_element(block.d, rd, SD, PD, params.in_d);
        if (!d.inside) { continue; }
        for (var rh = 0u; rh < SH; rh++) {
            let h = block_element(block.h, rh, SH, PH, params.in_h);
            if (!h.inside) { continue; }
            let me = logical_plane + (d.at * params.in_h + h.at) * params.in_w + w0;   // as acc_add saw it
            let dx_row = dx_plane + d.at * params.dx_d + h.at * params.dx_h + w0;
            store_row(dx_row, me, w0, dy, winner);
        }
    }
}

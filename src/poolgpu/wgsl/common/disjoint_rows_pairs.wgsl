// A block row of the one-pass disjoint max gradient over rows (max_pool_grad_disjoint_rows.wgsl)
// for 16-bit x and dx, read and written eight elements (a pair of chunks) per 16-byte load
// and store: SW / 2 pairs.  Requires (poolgpu.kernels checks): SW even, so that w0 = 4 * SW *
// block column is a multiple of 8; in_w a multiple of 8; x's and dx's rows and starts at
// multiples of 8 elements.  (common/disjoint_rows_chunks.wgsl: 4-element chunks.)

// Pair p of the span (of x's row from column w0).
fn fill_pair(span: ptr<function, array<Tap, 32>>, row: u32, w0: u32, p: u32) {
    if (2u * p >= SW) { return; }
    let eight = x_load8(row + min(w0 + 8u * p, params.in_w - 8u));   // past the row: padding
    (*span)[8u * p] = tap_of(eight[0]);
    (*span)[8u * p + 1u] = tap_of(eight[1]);
    (*span)[8u * p + 2u] = tap_of(eight[2]);
    (*span)[8u * p + 3u] = tap_of(eight[3]);
    (*span)[8u * p + 4u] = tap_of(eight[4]);
    (*span)[8u * p + 5u] = tap_of(eight[5]);
    (*span)[8u * p + 6u] = tap_of(eight[6]);
    (*span)[8u * p + 7u] = tap_of(eight[7]);
}

fn fill_span(span: ptr<function, array<Tap, 32>>, row: u32, w0: u32) {
    fill_pair(span, row, w0, 0u);
    fill_pair(span, row, w0, 1u);
    fill_pair(span, row, w0, 2u);
    fill_pair(span, row, w0, 3u);
}

// Pair p of a dx row of the block: each element its window's dy where it is the argmax, else zero.
fn store_pair(dx_row: u32, me: u32, w0: u32, dy: array<Raw, 4>, winner: array<u32, 4>, p: u32) {
    if (2u * p >= SW || w0 + 8u * p >= params.in_w) { return; }
    let e = 8u * p;
    dx_store8(dx_row + e, array<Raw, 8>(
        dx_element(me, e, dy, winner), dx_element(me, e + 1u, dy, winner),
        dx_element(me, e + 2u, dy, winner), dx_element(me, e + 3u, dy, winner),
        dx_element(me, e + 4u, dy, winner), dx_element(me, e + 5u, dy, winner),
        dx_element(me, e + 6u, dy, winner), dx_element(me, e + 7u, dy, winner)));
}

fn store_row(dx_row: u32, me: u32, w0: u32, dy: array<Raw, 4>, winner: array<u32, 4>) {
    store_pair(dx_row, me, w0, dy, winner, 0u);
    store_pair(dx_row, me, w0, dy, winner, 1u);
    store_pair(dx_row, me, w0, dy, winner, 2u);
    store_pair(dx_row, me, w0, dy, winner, 3u);
}

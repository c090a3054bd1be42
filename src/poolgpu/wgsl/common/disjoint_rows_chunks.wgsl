// A block row of the one-pass disjoint max gradient over rows (max_pool_grad_disjoint_rows.wgsl),
// read and written in SW aligned 4-element chunks.  (common/disjoint_rows_pairs.wgsl: pairs.)

// Chunk j of the span (of x's row from column w0).
fn fill_chunk(span: ptr<function, array<Tap, 32>>, row: u32, w0: u32, j: u32) {
    if (j >= SW) { return; }
    let chunk = x_load4(row + min(w0 + 4u * j, params.in_w - 4u));   // past the row: padding
    (*span)[4u * j] = tap_of(chunk[0]);
    (*span)[4u * j + 1u] = tap_of(chunk[1]);
    (*span)[4u * j + 2u] = tap_of(chunk[2]);
    (*span)[4u * j + 3u] = tap_of(chunk[3]);
}

fn fill_span(span: ptr<function, array<Tap, 32>>, row: u32, w0: u32) {
    fill_chunk(span, row, w0, 0u);
    fill_chunk(span, row, w0, 1u);
    fill_chunk(span, row, w0, 2u);
    fill_chunk(span, row, w0, 3u);
    fill_chunk(span, row, w0, 4u);
    fill_chunk(span, row, w0, 5u);
    fill_chunk(span, row, w0, 6u);
    fill_chunk(span, row, w0, 7u);
}

// Chunk j of a dx row of the block: each element its window's dy where it is the argmax, else zero.
fn store_chunk(dx_row: u32, me: u32, w0: u32, dy: array<Raw, 4>, winner: array<u32, 4>, j: u32) {
    if (j >= SW || w0 + 4u * j >= params.in_w) { return; }
    let e = 4u * j;
    dx_store4(dx_row + e, array<Raw, 4>(
        dx_element(me, e, dy, winner), dx_element(me, e + 1u, dy, winner),
        dx_element(me, e + 2u, dy, winner), dx_element(me, e + 3u, dy, winner)));
}

fn store_row(dx_row: u32, me: u32, w0: u32, dy: array<Raw, 4>, winner: array<u32, 4>) {
    store_chunk(dx_row, me, w0, dy, winner, 0u);
    store_chunk(dx_row, me, w0, dy, winner, 1u);
    store_chunk(dx_row, me, w0, dy, winner, 2u);
    store_chunk(dx_row, me, w0, dy, winner, 3u);
    store_chunk(dx_row, me, w0, dy, winner, 4u);
    store_chunk(dx_row, me, w0, dy, winner, 5u);
    store_chunk(dx_row, me, w0, dy, winner, 6u);
    store_chunk(dx_row, me, w0, dy, winner, 7u);
}

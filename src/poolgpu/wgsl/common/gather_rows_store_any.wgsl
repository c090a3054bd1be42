// store_eight of common/gather_rows.wgsl for rows of any width that start anywhere: the
// eight sums element by element, those inside the row, through the scalar stores (16-bit
// ones race-free: the word's other half may be another invocation's).

fn store_eight(dx_row: u32, w0: u32, sums: Eight) {
    // (written out: an array indexed by a loop variable lives in memory)
    store_within(dx_row, w0, 0u, sums.lo.x);
    store_within(dx_row, w0, 1u, sums.lo.y);
    store_within(dx_row, w0, 2u, sums.lo.z);
    store_within(dx_row, w0, 3u, sums.lo.w);
    store_within(dx_row, w0, 4u, sums.hi.x);
    store_within(dx_row, w0, 5u, sums.hi.y);
    store_within(dx_row, w0, 6u, sums.hi.z);
    store_within(dx_row, w0, 7u, sums.hi.w);
}

fn store_within(dx_row: u32, w0: u32, i: u32, value: f32) {
    if (w0 + i < params.in_w) { dx_store(dx_row + w0 + i, from_f32(value)); }
}

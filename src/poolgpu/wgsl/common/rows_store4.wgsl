// store_four of window_walk_rows.wgsl where y (and idx) are contiguous along W, rows start
// at multiples of 4 elements and out_w is a multiple of 4: one 4-element store per tensor.
fn store_four(acc: array<Acc, 4>, at: Out) {
    // (array values built in place: naga rejects a `var` array passed by value)
    let values = array<Raw, 4>(
        acc_value(acc[0], at),
        acc_value(acc[1], Out(at.n, at.c, at.d, at.h, at.w + 1u)),
        acc_value(acc[2], Out(at.n, at.c, at.d, at.h, at.w + 2u)),
        acc_value(acc[3], Out(at.n, at.c, at.d, at.h, at.w + 3u)));
    let indices = array<u32, 4>(acc_index(acc[0]), acc_index(acc[1]), acc_index(acc[2]), acc_index(acc[3]));
    y_store4(y_offset(at), values);
    idx_store4_index(idx_offset(at), indices);
}

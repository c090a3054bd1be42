// store_four of window_walk_rows.wgsl for any output strides and widths (out_w not a
// multiple of 4: the last four of a row reach past it): element by element, those inside
// the row, through the scalar stores (race-free for packed 8- and 16-bit outputs too).
fn store_one(acc: Acc, at: Out) {
    if (at.w < params.out_w) {
        y_store(y_offset(at), acc_value(acc, at));
        idx_store_index(idx_offset(at), acc_index(acc));
    }
}

fn store_four(acc: array<Acc, 4>, at: Out) {
    store_one(acc[0], at);
    store_one(acc[1], Out(at.n, at.c, at.d, at.h, at.w + 1u));
    store_one(acc[2], Out(at.n, at.c, at.d, at.h, at.w + 2u));
    store_one(acc[3], Out(at.n, at.c, at.d, at.h, at.w + 3u));
}

// store_four of window_walk_rows.wgsl for any output strides and widths (out_w not a
// multiple of 4: the last four of a row reach past it): those inside the row, through the
// scalar stores (race-free for packed 8- and 16-bit outputs too).
//
// With PAIR_STORES (poolgpu.kernels: 16-bit y contiguous along W), two neighbouring values whose
// first sits at an even offset are stored as a pair, one word store where one element takes
// two word atomics (float16 dilated max of cases A and B, 55 and 27 outputs wide, on
// lavapipe: 1.3-1.9x faster).  Only then: its branches make lavapipe's compile slower.
override PAIR_STORES: bool = false;

fn store_within_row(acc: Acc, at: Out) {
    if (at.w < params.out_w) { store_one(at, acc); }
}

fn store_four(acc: array<Acc, 4>, at: Out) {
    let at1 = Out(at.n, at.c, at.d, at.h, at.w + 1u);
    let at2 = Out(at.n, at.c, at.d, at.h, at.w + 2u);
    let at3 = Out(at.n, at.c, at.d, at.h, at.w + 3u);
    let y = y_offset(at);
    if (!PAIR_STORES || at.w + 1u >= params.out_w || ((y & 1u) == 1u && at.w + 2u >= params.out_w)) {
        store_within_row(acc[0], at);
        store_within_row(acc[1], at1);
        store_within_row(acc[2], at2);
        store_within_row(acc[3], at3);
        return;
    }
    // (written out: an array indexed by a loop variable lives in memory)
    let idx = idx_offset(at);
    idx_store_index(idx, acc_index(acc[0]));   // (at.w + 1 < out_w here)
    idx_store_index(idx + params.idx_w, acc_index(acc[1]));
    if (at2.w < params.out_w) { idx_store_index(idx + 2u * params.idx_w, acc_index(acc[2])); }
    if (at3.w < params.out_w) { idx_store_index(idx + 3u * params.idx_w, acc_index(acc[3])); }
    // values computed once, before the branches (inlined in each, the compile took 3x as long)
    let values = array<Raw, 4>(acc_value(acc[0], at), acc_value(acc[1], at1), acc_value(acc[2], at2),
                               acc_value(acc[3], at3));
    if ((y & 1u) == 0u) {   // pairs (0, 1) and (2, 3)
        y_store_pair(y, values[0], values[1]);
        if (at3.w < params.out_w) {
            y_store_pair(y + 2u, values[2], values[3]);
        } else if (at2.w < params.out_w) {
            y_store(y + 2u, values[2]);
        }
    } else {                // 0 alone, the pair (1, 2), 3 alone
        y_store(y, values[0]);
        y_store_pair(y + 1u, values[1], values[2]);
        if (at3.w < params.out_w) { y_store(y + 3u, values[3]); }
    }
}

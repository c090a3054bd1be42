// Max pooling: DirectML MAX_POOLING, MAX_POOLING1 (optional indices), MAX_POOLING2 (dilations).
// The accumulator of common/window_walk.wgsl.  Taps come in increasing flat index, so a
// strict `>` on exact integer keys keeps the first maximum (ties, -0 == +0) and the first
// NaN (NaN keys are the largest).  The winner's raw bits are copied: values stay exact.
// Tensors: x (x_load), y (y_store), idx (idx_store_index; a no-op without indices).

struct Acc { key: Key, raw: Raw, index: u32, found: bool }

fn acc_new() -> Acc {
    var acc: Acc;
    return acc;
}

fn acc_add(acc: ptr<function, Acc>, raw: Raw, index: u32, inside: bool) {
    let key = key_of(raw);
    let take = inside && (!(*acc).found || key_gt(key, (*acc).key));
    (*acc).key = select((*acc).key, key, take);
    (*acc).raw = select((*acc).raw, raw, take);
    (*acc).index = select((*acc).index, index, take);
    (*acc).found = (*acc).found || take;
}

fn acc_store(acc: Acc, at: Out) {
    y_store(y_offset(at), acc.raw);
    idx_store_index(idx_offset(at), acc.index);
}

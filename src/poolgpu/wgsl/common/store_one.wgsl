// An output's value (and index) from its accumulator, through the tensors' scalar stores
// (the walks that store outputs one by one: window_walk.wgsl, window_walk_merge.wgsl,
// rows_store_tail.wgsl, ...).
fn store_one(at: Out, acc: Acc) {
    y_store(y_offset(at), acc_value(acc, at));
    idx_store_index(idx_offset(at), acc_index(acc));
}

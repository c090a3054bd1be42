// Max pooling: DirectML MAX_POOLING, MAX_POOLING1 (optional indices), MAX_POOLING2 (dilations).
// common/window_walk.wgsl feeds each window to the max rule's accumulator
// (common/max_accumulator.wgsl); the winner's raw bits are copied: values stay exact.
// Tensors: x (x_load), y (y_store), idx (idx_store_index; a no-op without indices).

fn acc_store(acc: Acc, at: Out) {
    y_store(y_offset(at), acc.raw);
    idx_store_index(idx_offset(at), acc.index);
}

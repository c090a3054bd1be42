// Max pooling: DirectML MAX_POOLING, MAX_POOLING1 (optional indices), MAX_POOLING2 (dilations).
// A window walk (common/window_walk*.wgsl) feeds each window to the max rule's accumulator
// (common/max_accumulator.wgsl); the winner's raw bits are the output: values stay exact.

// The accumulator of output `at`'s window before its first tap (the general walk's).
fn acc_for(at: Out) -> Acc { return acc_new(); }
fn acc_value(acc: Acc, at: Out) -> Raw { return acc.raw; }
fn acc_index(acc: Acc) -> u32 { return acc.index; }

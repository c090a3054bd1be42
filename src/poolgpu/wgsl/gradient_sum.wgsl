// The merge of a split gather (common/windows_covering.wgsl's PARTS; window_walk_merge.wgsl
// over dx, as y): a dx element's parts are f32 sums, added in increasing part order, the
// total converted once to dx's type.  The interface of common/window_geometry.wgsl's
// accumulators, as far as the merge uses it.
struct Acc { sum: f32 }
fn acc_new() -> Acc { return Acc(0.0); }
fn acc_merge(a: Acc, b: Acc) -> Acc { return Acc(a.sum + b.sum); }
fn acc_value(acc: Acc, at: Out) -> Raw { return from_f32(acc.sum); }
fn acc_index(acc: Acc) -> u32 { return 0u; }

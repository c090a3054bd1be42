// The max rule of the fixed-window max operators (max pooling and its gradient), as an
// accumulator (the interface of common/window_walk.wgsl).  Fed the window's taps in
// increasing flat index, a strict `>` on exact integer keys keeps the first maximum (ties,
// -0 == +0) and the first NaN (NaN keys are the largest); padding (`inside` false) is never
// a candidate.  `raw` is the winner's bits, `index` its flat logical index; `found` is
// false only for a window wholly in padding.

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

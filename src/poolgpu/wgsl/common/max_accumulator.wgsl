// The max rule of the fixed-window max operators (max pooling and its gradient), as an
// accumulator (the interface of common/window_geometry.wgsl).  Fed the window's taps in
// increasing flat index, a strict `>` on exact integer keys keeps the first maximum (ties,
// -0 == +0) and the first NaN (NaN keys are the largest); padding (`inside` false) is never
// a candidate.  Types with a key floor start from it, so any input element beats it; the
// others (32- and 64-bit integers) track `found` instead.  `raw` is the winner's bits,
// `index` its flat logical index; `found` is false only for a window wholly in padding.

struct Tap { key: Key, raw: Raw }

fn tap_of(raw: Raw) -> Tap {
    return Tap(key_of(raw), raw);
}

struct Acc { key: Key, raw: Raw, index: u32, found: bool }

fn acc_new() -> Acc {
    var acc: Acc;
    acc.key = KEY_FLOOR;
    return acc;
}

fn acc_add(acc: Acc, t: Tap, index: u32, inside: bool) -> Acc {
    let take = inside && (key_gt(t.key, acc.key) || (!HAS_KEY_FLOOR && !acc.found));
    return Acc(select(acc.key, t.key, take), select(acc.raw, t.raw, take), select(acc.index, index, take),
               acc.found || take);
}

// The accumulator of two disjoint sets of taps (the plane walk's merge): the larger key, and
// among equal keys the smaller index, as feeding all taps in increasing index would keep.
fn acc_merge(a: Acc, b: Acc) -> Acc {
    let equal = !key_gt(a.key, b.key) && !key_gt(b.key, a.key);
    if (b.found && (!a.found || key_gt(b.key, a.key) || (equal && b.index < a.index))) { return b; }
    return a;
}

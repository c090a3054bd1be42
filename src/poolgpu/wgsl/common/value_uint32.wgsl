// UINT32 values: the value is its own key (every u32 is a value: no key floor).
alias Raw = u32;
alias Key = u32;
const HAS_KEY_FLOOR = false;
const KEY_FLOOR = 0u;
fn key_of(r: Raw) -> Key { return r; }
fn key_gt(a: Key, b: Key) -> bool { return a > b; }
// A value as the two words of a partial result (common/*_partials.wgsl), and back.
fn raw_words(r: Raw) -> vec2<u32> { return vec2<u32>(r, 0u); }
fn raw_of_words(w: vec2<u32>) -> Raw { return w.x; }

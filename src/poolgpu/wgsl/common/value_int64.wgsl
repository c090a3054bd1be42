// 64-bit integer values as (low, high) words.  Keys are (high ^ $sign_bit, low), compared
// lexicographically as unsigned pairs ($sign_bit is 0x80000000 for INT64, 0 for UINT64);
// every pair is a value, so there is no key floor.
alias Raw = vec2<u32>;
alias Key = vec2<u32>;
const HAS_KEY_FLOOR = false;
const KEY_FLOOR = vec2<u32>(0u, 0u);
fn key_of(r: Raw) -> Key { return vec2<u32>(r.y ^ ${sign_bit}u, r.x); }
fn key_gt(a: Key, b: Key) -> bool { return a.x > b.x || (a.x == b.x && a.y > b.y); }
// A value as the two words of a partial result (common/*_partials.wgsl), and back.
fn raw_words(r: Raw) -> vec2<u32> { return r; }
fn raw_of_words(w: vec2<u32>) -> Raw { return w; }

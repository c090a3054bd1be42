// Integer values of 8, 16 or 32 bits, zero-extended into a u32.  The key is the value as an
// i32: shifting left by $shift then arithmetically right sign-extends signed 8- and 16-bit
// values ($shift = 32 - bits for them, 0 otherwise).  Below 32 bits, KEY_FLOOR (the least
// i32) is below every key, so padding never wins; INT32 keys span all of i32 and have none.
alias Raw = u32;
alias Key = i32;
const HAS_KEY_FLOOR = $has_floor;
const KEY_FLOOR = i32(-2147483647 - 1);
fn key_of(r: Raw) -> Key { return bitcast<i32>(r << ${shift}u) >> ${shift}u; }
fn key_gt(a: Key, b: Key) -> bool { return a > b; }
// A value as the two words of a partial result (common/*_partials.wgsl), and back.
fn raw_words(r: Raw) -> vec2<u32> { return vec2<u32>(r, 0u); }
fn raw_of_words(w: vec2<u32>) -> Raw { return w.x; }

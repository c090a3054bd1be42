// UINT32 values: the value is its own key (every u32 is a value: no key floor).
alias Raw = u32;
alias Key = u32;
const HAS_KEY_FLOOR = false;
const KEY_FLOOR = 0u;
fn key_of(r: Raw) -> Key { return r; }
fn key_gt(a: Key, b: Key) -> bool { return a > b; }

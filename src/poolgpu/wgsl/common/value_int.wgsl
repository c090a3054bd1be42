// Integer values of 8, 16 or 32 bits, zero-extended into a u32.  XOR with $sign_bit (the
// sign bit for signed types, 0 for unsigned) orders them as unsigned keys.
alias Raw = u32;
alias Key = u32;
fn key_of(r: Raw) -> Key { return r ^ ${sign_bit}u; }
fn key_gt(a: Key, b: Key) -> bool { return a > b; }

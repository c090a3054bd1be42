// FLOAT32 values.  Max pooling compares integer keys, never floats: WGSL lets implementations
// assume no NaN in float arithmetic, and the contract needs NaN above +inf and -0 == +0.
alias Raw = u32;
alias Key = u32;
fn key_of(r: Raw) -> Key {
    let magnitude = r & 0x7fffffffu;
    let ordered = select(r | 0x80000000u, ~r, r >= 0x80000000u);
    return select(select(ordered, 0x80000000u, magnitude == 0u), 0xffffffffu, magnitude > 0x7f800000u);
}
fn key_gt(a: Key, b: Key) -> bool { return a > b; }
fn to_f32(r: Raw) -> f32 { return bitcast<f32>(r); }
fn from_f32(v: f32) -> Raw { return bitcast<u32>(v); }

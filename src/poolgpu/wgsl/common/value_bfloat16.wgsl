// BFLOAT16 values (16 low bits of a u32: the upper half of a float32); keys as for FLOAT32
// (value_float32.wgsl), on the upper half's bits.
alias Raw = u32;
alias Key = i32;
const HAS_KEY_FLOOR = true;
const KEY_FLOOR = i32(-2147483647 - 1);
fn key_of(r: Raw) -> Key {
    let magnitude = r & 0x7fffu;
    let signed = select(i32(magnitude), -i32(magnitude), r >= 0x8000u);
    return select(signed, 2147483647, magnitude > 0x7f80u);
}
fn key_gt(a: Key, b: Key) -> bool { return a > b; }
fn to_f32(r: Raw) -> f32 { return bitcast<f32>(r << 16u); }
fn magnitude_f32(r: Raw) -> f32 { return to_f32(r & 0x7fffu); }   // |value| (value_float16.wgsl: why on bits)
// f32 -> bfloat16 bits, rounded to nearest even (an overflow rounds to infinity through the
// carry into the exponent); a NaN as the canonical quiet NaN (value_float32.wgsl: why).
fn from_f32(v: f32) -> Raw {
    let b = bitcast<u32>(v);
    if ((b & 0x7fffffffu) > 0x7f800000u) { return 0x7fc0u; }
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}
// A value as the two words of a partial result (common/*_partials.wgsl), and back.
fn raw_words(r: Raw) -> vec2<u32> { return vec2<u32>(r, 0u); }
fn raw_of_words(w: vec2<u32>) -> Raw { return w.x; }

// FLOAT16 values (16 low bits of a u32); keys as for FLOAT32.
alias Raw = u32;
alias Key = u32;
fn key_of(r: Raw) -> Key {
    let magnitude = r & 0x7fffu;
    let ordered = select(r | 0x8000u, ~r & 0xffffu, r >= 0x8000u);
    return select(select(ordered, 0x8000u, magnitude == 0u), 0xffffu, magnitude > 0x7c00u);
}
fn key_gt(a: Key, b: Key) -> bool { return a > b; }
// Arithmetic runs in f32 (float16_convert.wgsl, prepended for FLOAT16: exact, rounded to nearest even).
fn to_f32(r: Raw) -> f32 { return f16_bits_to_f32(r); }
fn from_f32(v: f32) -> Raw { return f32_to_f16_bits(v); }

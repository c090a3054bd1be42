// FLOAT32 values.  Max pooling compares exact integer keys, never floats: WGSL lets
// implementations assume no NaN in float arithmetic, GPUs may flush subnormals in float
// compares, and poolgpu's rules need NaN above +inf and -0 == +0.  A key is the value's
// magnitude bits, negated for negative values (so -0 and +0 are both 0), NaN the largest
// key; KEY_FLOOR is below every key, so padding never wins.
alias Raw = u32;
alias Key = i32;
const HAS_KEY_FLOOR = true;
const KEY_FLOOR = i32(-2147483647 - 1);
fn key_of(r: Raw) -> Key {
    let magnitude = r & 0x7fffffffu;
    let signed = select(i32(magnitude), -i32(magnitude), r >= 0x80000000u);
    return select(signed, 2147483647, magnitude > 0x7f800000u);
}
fn key_gt(a: Key, b: Key) -> bool { return a > b; }
fn to_f32(r: Raw) -> f32 { return bitcast<f32>(r); }
fn magnitude_f32(r: Raw) -> f32 { return to_f32(r & 0x7fffffffu); }   // |value| (value_float16.wgsl: why on bits)
fn from_f32(v: f32) -> Raw { return bitcast<u32>(v); }
// A value as the two words of a partial result (common/*_partials.wgsl), and back.
fn raw_words(r: Raw) -> vec2<u32> { return vec2<u32>(r, 0u); }
fn raw_of_words(w: vec2<u32>) -> Raw { return w.x; }

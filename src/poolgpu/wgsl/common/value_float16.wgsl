// FLOAT16 values (16 low bits of a u32); keys as for FLOAT32 (value_float32.wgsl).
alias Raw = u32;
alias Key = i32;
const HAS_KEY_FLOOR = true;
const KEY_FLOOR = i32(-2147483647 - 1);
fn key_of(r: Raw) -> Key {
    let magnitude = r & 0x7fffu;
    let signed = select(i32(magnitude), -i32(magnitude), r >= 0x8000u);
    return select(signed, 2147483647, magnitude > 0x7c00u);
}
fn key_gt(a: Key, b: Key) -> bool { return a > b; }
fn to_f32(r: Raw) -> f32 { return unpack2x16float(r).x; }
// |value|, cleared on the bits before widening: abs() of the widened value, LLVM moves
// before the widening, into half-precision arithmetic that it runs lane by lane (lavapipe:
// float16 Lp pooling 2x slower).
fn magnitude_f32(r: Raw) -> f32 { return to_f32(r & 0x7fffu); }

// f32 -> f16 bits, rounded to nearest even, overflowing to infinity, NaN kept quiet.
// (pack2x16float's result is indeterminate outside the f16 range, so it is not used.)
fn from_f32(v: f32) -> Raw {
    let b = bitcast<u32>(v);
    let sign = (b >> 16u) & 0x8000u;
    let a = b & 0x7fffffffu;
    if (a > 0x7f800000u) { return sign | 0x7e00u | ((a >> 13u) & 0x3ffu); }   // NaN
    if (a >= 0x477ff000u) { return sign | 0x7c00u; }                          // >= 65520: infinity
    if (a >= 0x38800000u) {                                                    // normal: >= 2^-14
        let r = a - 0x38000000u;                                               // rebias 127 -> 15
        return sign | ((r + 0xfffu + ((r >> 13u) & 1u)) >> 13u);
    }
    // subnormal f16 (units of 2^-24) or zero: shift the significand into place, ties to even
    let e = a >> 23u;
    if (e < 102u) { return sign; }                                             // < 2^-25
    let m = (a & 0x7fffffu) | 0x800000u;
    let shift = 126u - e;                                                      // 14 ..= 24
    let half = 1u << (shift - 1u);
    let rest = m & ((1u << shift) - 1u);
    let q = m >> shift;
    return sign | (q + u32(rest > half || (rest == half && (q & 1u) == 1u)));
}
// A value as the two words of a partial result (common/*_partials.wgsl), and back.
fn raw_words(r: Raw) -> vec2<u32> { return vec2<u32>(r, 0u); }
fn raw_of_words(w: vec2<u32>) -> Raw { return w.x; }

// FLOAT16 <-> f32 conversions in integer operations, exact and correctly rounded on every
// adapter (no shader-f16 needed).  WGSL leaves pack2x16float indeterminate outside f16's
// finite range and does not fix its rounding, so results would differ between drivers.

// An f16 (low 16 bits) as f32: exact (every f16 is an f32), NaN payloads kept.
fn f16_bits_to_f32(h: u32) -> f32 {
    let sign = (h & 0x8000u) << 16u;
    let exponent = (h >> 10u) & 0x1fu;
    let mantissa = h & 0x3ffu;
    if (exponent == 0x1fu) { return bitcast<f32>(sign | 0x7f800000u | (mantissa << 13u)); }
    if (exponent == 0u) {  // zero or subnormal: mantissa * 2^-24, an exact f32 product
        return bitcast<f32>(sign | bitcast<u32>(f32(mantissa) * 5.9604644775390625e-8));
    }
    return bitcast<f32>(sign | ((exponent + 112u) << 23u) | (mantissa << 13u));
}

// An f32 as f16 bits, rounded to nearest even; beyond f16's range +-inf; NaN stays a (quiet) NaN.
fn f32_to_f16_bits(v: f32) -> u32 {
    let bits = bitcast<u32>(v);
    let sign = (bits >> 16u) & 0x8000u;
    let magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u) { return sign | 0x7e00u | ((magnitude >> 13u) & 0x3ffu); }
    if (magnitude >= 0x477ff000u) { return sign | 0x7c00u; }  // >= 65520 (halfway above 65504) and inf
    if (magnitude >= 0x38800000u) {  // normal f16 (>= 2^-14): drop 13 mantissa bits, ties to even
        let rounded = magnitude + 0xfffu + ((magnitude >> 13u) & 1u);
        return sign | ((rounded - 0x38000000u) >> 13u);  // rebias the exponent: (127 - 15) << 23
    }
    if (magnitude <= 0x33000000u) { return sign; }  // <= 2^-25: rounds to zero (2^-25 ties to even 0)
    // subnormal f16: units of 2^-24, i.e. the 24-bit significand shifted right by 126 - exponent
    let shift = 126u - (magnitude >> 23u);  // 14 ..= 24
    let significand = (magnitude & 0x7fffffu) | 0x800000u;
    let kept = significand >> shift;
    let rest = significand & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    return sign | (kept + u32(rest > half || (rest == half && (kept & 1u) == 1u)));
}

// f32 arithmetic that WGSL leaves inexact, done exactly: the conversion of integers beyond
// 2^24 (WGSL lets it round either way) and division (WGSL allows 2.5 ulp; GPUs divide by a
// reciprocal).  Both round to nearest, ties to even, as IEEE 754 does; additions and
// products of f32 are correctly rounded in WGSL already.

// v as the nearest f32, ties to even.
fn f32_of(v: u32) -> f32 {
    if (v < 0x1000000u) { return f32(v); }
    let shift = 8u - countLeadingZeros(v);   // keeps 24 significant bits
    let kept = v >> shift;
    let rest = v & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    let up = rest > half || (rest == half && (kept & 1u) == 1u);
    return f32(kept + u32(up)) * f32(1u << shift);   // (both exact)
}

// v as the nearest f32, ties to even.
fn f32_of_i32(v: i32) -> f32 {
    let magnitude = f32_of(select(bitcast<u32>(v), 0u - bitcast<u32>(v), v < 0));
    return select(magnitude, -magnitude, v < 0);
}

// A finite non-zero f32's magnitude as significand * 2^(exponent - 150), the significand in
// [2^23, 2^24) (subnormals normalised) and the exponent biased as f32's.
struct Unpacked { significand: u32, exponent: i32 }
fn unpacked(magnitude: u32) -> Unpacked {
    let field = i32(magnitude >> 23u);
    let bits = magnitude & 0x7fffffu;
    let shift = select(0u, countLeadingZeros(bits) - 8u, field == 0);
    return Unpacked(select(bits | 0x800000u, bits << shift, field == 0), select(field, 1 - i32(shift), field == 0));
}

// a / b rounded to nearest, ties to even.  The quotient of the significands, n / d in [1, 2),
// to 25 bits: q = floor(n * 2^24 / d) and its remainder, exact in u32 arithmetic: an estimate
// from f32 division (WGSL: within 2.5 ulp, a few units of q), corrected by the remainder
// n * 2^24 - q * d, which u32 arithmetic gives exactly modulo 2^32 and which is far smaller than
// 2^31.  Then rounded with the remainder as the sticky bit, subnormal results as such.  NaN,
// infinities and zeros as IEEE 754 gives them (a NaN canonical).  Without branches: shaders
// inline it where each output is stored, and it stays short.
fn divide_rn(a: f32, b: f32) -> f32 {
    let ua = bitcast<u32>(a);
    let ub = bitcast<u32>(b);
    let sign = (ua ^ ub) & 0x80000000u;
    let ma = ua & 0x7fffffffu;
    let mb = ub & 0x7fffffffu;
    let x = unpacked(ma);
    let y = unpacked(mb);
    let d = y.significand;
    let shorter = x.significand < d;
    let n = x.significand << u32(shorter);
    let exponent = x.exponent - y.exponent + 127 - i32(shorter);   // of the quotient in [1, 2)
    var q = u32(f32(n) / f32(d) * 16777216.0);   // (n, d and the power of two exact in f32)
    var r = bitcast<i32>((n << 24u) - q * d);
    let step = i32(floor(f32(r) / f32(d)));
    q = u32(i32(q) + step);
    r -= step * i32(d);
    q = q - u32(r < 0) + u32(r >= i32(d));
    r = r + select(0, i32(d), r < 0) - select(0, i32(d), r >= i32(d));
    let sticky = r != 0;
    // normal: 24 bits and the rounding bit; a significand rounded up to 2^24 carries into the
    // exponent, up to infinity
    let kept = q >> 1u;
    let up = (q & 1u) == 1u && (sticky || (kept & 1u) == 1u);
    let normal = min((u32(max(exponent, 1)) << 23u) + (kept - 0x800000u) + u32(up), 0x7f800000u);
    // subnormal: the quotient is q * 2^(exponent - 151), in units of 2^-149 q >> (2 - exponent);
    // past 25 bits of shift below half the least subnormal (q < 2^25)
    let shift = u32(clamp(2 - exponent, 1, 26));
    let low = q >> shift;
    let rest = q & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    let low_up = rest > half || (rest == half && (sticky || (low & 1u) == 1u));
    var bits = select(low + u32(low_up), normal, exponent >= 1);
    bits = select(bits, 0x7f800000u, exponent >= 255 || ma == 0x7f800000u || mb == 0u);
    bits = select(bits, 0u, ma == 0u || mb == 0x7f800000u);
    let nan = ma > 0x7f800000u || mb > 0x7f800000u || (ma == 0u && mb == 0u) || (ma == 0x7f800000u && mb == 0x7f800000u);
    return bitcast<f32>(select(sign | bits, 0x7fc00000u, nan));
}

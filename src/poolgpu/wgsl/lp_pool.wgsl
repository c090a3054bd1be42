// Lp pooling: DirectML LP_POOLING and LP_POOLING1 (dilations): (sum |x|^p)^(1/p) over the
// window's input elements.  The accumulator of the window walks (common/window_geometry.wgsl).
//
// To neither overflow nor underflow where the result is representable, terms are summed
// scaled by 2^-e, e being the exponent of the largest |x| seen so far (|x| < 2^e): when a
// larger one arrives the sum is rescaled (by a power of two: exact for integer p), and the
// root is scaled back with ldexp.  The sum is compensated (common/compensated_sum.wgsl).
// p = 1 and p = 2 skip pow().

override P: f32 = 2.0;

const MIN_EXPONENT: i32 = -126;   // |x| < 2^-126 for subnormals and zero

// |x| and its exponent e (|x| < 2^e; NaN and infinities give 129, so they propagate)
struct Tap { magnitude: f32, exponent: i32 }

fn tap_of(raw: Raw) -> Tap {
    let v = abs(to_f32(raw));
    return Tap(v, max(i32((bitcast<u32>(v) >> 23u) & 0xffu) - 126, MIN_EXPONENT));
}

struct Acc { sum: CompensatedSum, exponent: i32 }

fn acc_new() -> Acc {
    return Acc(CompensatedSum(0.0, 0.0), MIN_EXPONENT);
}

fn power_p(v: f32) -> f32 {
    if (P == 1.0) { return v; }
    if (P == 2.0) { return v * v; }
    return select(pow(v, P), 0.0, v == 0.0);
}

fn root_p(v: f32) -> f32 {
    if (P == 1.0) { return v; }
    if (P == 2.0) { return sqrt(v); }
    return select(pow(v, 1.0 / P), 0.0, v == 0.0);
}

// 2^(p * k) for k <= 0: exact ldexp for integer p.
fn rescale_factor(k: i32) -> f32 {
    if (P == 1.0) { return ldexp(1.0, k); }
    if (P == 2.0) { return ldexp(1.0, 2 * k); }
    return exp2(P * f32(k));
}

fn acc_add(acc: Acc, t: Tap, index: u32, inside: bool) -> Acc {
    var sum = acc.sum;
    var exponent = acc.exponent;
    if (inside && t.exponent > exponent) {
        let shrink = rescale_factor(exponent - t.exponent);
        sum = CompensatedSum(sum.sum * shrink, sum.error * shrink);
        exponent = t.exponent;
    }
    let term = power_p(ldexp(t.magnitude, -exponent));
    return Acc(compensated_add(sum, select(0.0, term, inside)), exponent);
}

fn acc_value(acc: Acc, at: Out) -> Raw {
    return from_f32(ldexp(root_p(compensated_total(acc.sum)), acc.exponent));
}

fn acc_index(acc: Acc) -> u32 { return 0u; }

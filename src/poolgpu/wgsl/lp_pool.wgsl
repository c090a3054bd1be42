// Lp pooling: DirectML LP_POOLING and LP_POOLING1 (dilations): (sum |x|^p)^(1/p) over the
// window's input elements.  The accumulator of common/window_walk.wgsl.
//
// To neither overflow nor underflow where the result is representable, terms are summed
// scaled by 2^-e, e being the exponent of the largest |x| seen so far (|x| < 2^e): when a
// larger one arrives the sum is rescaled by a power of two (exact for integer p), and the
// root is scaled back with ldexp.  The sum is compensated (Neumaier).  p = 1 and p = 2 skip
// pow().  Tensors: x (x_load), y (y_store).

override P: f32 = 2.0;

const MIN_EXPONENT: i32 = -126;   // |x| < 2^-126 for subnormals and zero

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

fn acc_add(acc: ptr<function, Acc>, raw: Raw, index: u32, inside: bool) {
    let v = abs(to_f32(raw));
    // |v| < 2^e with e from the exponent bits (NaN and infinities give 129: they propagate)
    let e = max(i32((bitcast<u32>(v) >> 23u) & 0xffu) - 126, MIN_EXPONENT);
    if (inside && e > (*acc).exponent) {
        let shrink = exp2(P * f32((*acc).exponent - e));
        (*acc).sum = CompensatedSum((*acc).sum.sum * shrink, (*acc).sum.error * shrink);
        (*acc).exponent = e;
    }
    let term = power_p(ldexp(v, -(*acc).exponent));
    (*acc).sum = compensated_add((*acc).sum, select(0.0, term, inside));
}

fn acc_store(acc: Acc, at: Out) {
    y_store(y_offset(at), from_f32(ldexp(root_p(compensated_total(acc.sum)), acc.exponent)));
}

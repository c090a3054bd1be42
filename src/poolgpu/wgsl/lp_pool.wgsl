// Lp pooling: DirectML LP_POOLING and LP_POOLING1 (dilations): (sum |x|^p)^(1/p) over the
// window's input elements.  The accumulator of the window walks (common/window_geometry.wgsl).
//
// To neither overflow nor underflow where the result is representable, terms are summed
// scaled by 2^-e, e being the exponent of the largest |x| seen so far (|x| < 2^e, e kept
// in [-126, 126] so that 2^-e is a normal float built from its bits: no ldexp per tap):
// when a larger one arrives the sum is rescaled (by a power of two: exact for integer p),
// and the root is scaled back by 2^e.  The terms are never negative, so a plain f32 sum of
// n of them is within (n - 1) half-ulps of exact (no cancellation): windows of at most 9
// taps (poolgpu.kernels) sum plainly, within 4 ulp; larger ones are compensated
// (common/compensated_sum.wgsl, COMPENSATED).  p = 1 and p = 2 skip pow().
//
// Float16 inputs with p <= 4 need no scaling (SCALED = false): |x|^p of every float16 lies
// within f32's normal range (2^-96 to 2^64), so the terms are the same up to the power of
// two (bit-identical sums for p = 1 and 2) and the rescaling arithmetic is saved.

override P: f32 = 2.0;
override COMPENSATED: bool = true;
override SCALED: bool = true;

const MIN_EXPONENT: i32 = -126;   // |x| < 2^-126 for subnormals and zero
const MAX_EXPONENT: i32 = 126;    // larger |x| (and NaN, infinities) are scaled by 2^-126 too

// |x| and its exponent e (|x| < 2^e, clamped to [MIN_EXPONENT, MAX_EXPONENT])
struct Tap { magnitude: f32, exponent: i32 }

fn tap_of(raw: Raw) -> Tap {
    let v = magnitude_f32(raw);
    if (!SCALED) { return Tap(v, 0); }
    return Tap(v, clamp(i32((bitcast<u32>(v) >> 23u) & 0xffu) - 126, MIN_EXPONENT, MAX_EXPONENT));
}

// 2^k for k in [-126, 127], from its bits.
fn power_of_two(k: i32) -> f32 {
    return bitcast<f32>(u32(k + 127) << 23u);
}

struct Acc { sum: CompensatedSum, exponent: i32, scale: f32 }   // scale = 2^-exponent

fn acc_new() -> Acc {
    if (!SCALED) { return Acc(CompensatedSum(0.0, 0.0), 0, 1.0); }
    return Acc(CompensatedSum(0.0, 0.0), MIN_EXPONENT, power_of_two(-MIN_EXPONENT));
}

// The accumulator of output `at`'s window before its first tap (the general walk's).
fn acc_for(at: Out) -> Acc { return acc_new(); }

fn power_p(v: f32) -> f32 {   // v >= 0 or NaN
    if (P == 1.0) { return v; }
    if (P == 2.0) { return v * v; }
    return general_power(v, P);
}

fn root_p(v: f32) -> f32 {
    if (P == 1.0) { return v; }
    if (P == 2.0) { return sqrt(v); }
    return general_power(v, 1.0 / P);
}

// 2^(p * k) for k < 0: exact for p = 1 and p = 2 (flushed to 0 below 2^-126, where the
// terms are negligible anyway).
fn rescale_factor(k: i32) -> f32 {
    if (P == 1.0) { return select(0.0, power_of_two(k), k >= -126); }
    if (P == 2.0) { return select(0.0, power_of_two(2 * k), 2 * k >= -126); }
    return exp2(P * f32(k));
}

fn acc_add(acc: Acc, t: Tap, index: u32, inside: bool) -> Acc {
    // (branch-free: a branch that some lanes take costs both paths on SIMD adapters)
    let grow = SCALED && inside && t.exponent > acc.exponent;
    let exponent = select(acc.exponent, t.exponent, grow);
    let shrink = select(1.0, rescale_factor(acc.exponent - t.exponent), grow);
    let scale = select(acc.scale, power_of_two(-t.exponent), grow);
    let sum = CompensatedSum(acc.sum.sum * shrink, acc.sum.error * shrink);
    let term = power_p(t.magnitude * scale);
    let added = select(0.0, term, inside);
    if (!COMPENSATED) { return Acc(CompensatedSum(sum.sum + added, 0.0), exponent, scale); }
    return Acc(compensated_add(sum, added), exponent, scale);
}

// The accumulator of two disjoint sets of taps (the plane walk's merge): both sums at the
// larger exponent's scale, added with compensation.
fn acc_merge(a: Acc, b: Acc) -> Acc {
    let exponent = max(a.exponent, b.exponent);   // (0 for both when not SCALED)
    let fa = select(1.0, rescale_factor(a.exponent - exponent), a.exponent < exponent);
    let fb = select(1.0, rescale_factor(b.exponent - exponent), b.exponent < exponent);
    let sum = compensated_add(CompensatedSum(a.sum.sum * fa, a.sum.error * fa), b.sum.sum * fb);
    return Acc(CompensatedSum(sum.sum, sum.error + b.sum.error * fb), exponent, power_of_two(-exponent));
}

fn acc_value(acc: Acc, at: Out) -> Raw {
    // (a multiply, not ldexp: Mesa 22's ldexp does not propagate NaN)
    return from_f32(root_p(compensated_total(acc.sum)) * power_of_two(acc.exponent));
}

fn acc_index(acc: Acc) -> u32 { return 0u; }

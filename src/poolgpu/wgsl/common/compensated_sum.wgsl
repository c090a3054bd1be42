// Compensated f32 summation (Neumaier's): the rounding error of every addition is kept in
// `error`, so sums of many terms, and sums that cancel, stay accurate to about an ulp.
// (Knuth's branch-free TwoSum lost its compensation to Mesa's algebraic simplification;
// this form survives it.)  The partial results are kept as written (as_written.wgsl):
// NVIDIA's driver otherwise simplifies (s - (s + v)) + v to 0 and loses the compensation.
// Once the sum is infinite or NaN its error term is meaningless (inf - inf): the total is
// then the plain sum, so infinities and NaN propagate as in plain summation.

struct CompensatedSum { sum: f32, error: f32 }

fn compensated_add(s: CompensatedSum, v: f32) -> CompensatedSum {
    let t = as_written(s.sum + v);
    let lost = select(as_written(v - t) + s.sum, as_written(s.sum - t) + v, abs(s.sum) >= abs(v));
    return CompensatedSum(t, s.error + lost);
}

fn compensated_total(s: CompensatedSum) -> f32 {
    let finite = (bitcast<u32>(s.sum) & 0x7f800000u) != 0x7f800000u;
    return select(s.sum, s.sum + s.error, finite);
}

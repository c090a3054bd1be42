// Neumaier's compensated f32 summation: the rounding error of every addition is kept in
// `error`, so sums of many terms (and sums that cancel) stay accurate to about one ulp.
// Once the sum is infinite or NaN the error term is dropped, so infinities and NaN
// propagate as in plain summation.

struct CompensatedSum { sum: f32, error: f32 }

fn compensated_add(s: CompensatedSum, v: f32) -> CompensatedSum {
    let t = s.sum + v;
    let lost = select((v - t) + s.sum, (s.sum - t) + v, abs(s.sum) >= abs(v));
    let finite = (bitcast<u32>(t) & 0x7f800000u) != 0x7f800000u;
    return CompensatedSum(t, s.error + select(0.0, lost, finite));
}

fn compensated_total(s: CompensatedSum) -> f32 {
    return s.sum + s.error;
}

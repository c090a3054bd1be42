// Lp pooling's derivative d y / d x = sign(x) * (|x| / y)^(p - 1), 0 where y is 0 (a window
// of zeros): its two factors, shared by the gradient's gather (lp_pool_grad.wgsl) and its
// one pass over disjoint windows (common/lp_grad_disjoint.wgsl).  (|x| / y, never above 1
// beyond rounding, keeps the power in range where |x|^(p - 1) and y^(1 - p) would not be.)
// The override constant P is the including kernel's.

// A window's factor (|x| / y)^(p - 1) for an element of magnitude m (not 0) and result y.
fn lp_factor(m: f32, y: f32) -> f32 {
    if (P == 1.0) { return 1.0; }
    if (bitcast<u32>(y) == 0u) { return 0.0; }   // (y's rounding to the type kept it above 0 otherwise)
    let ratio = m / y;
    if (P == 2.0) { return ratio; }
    return general_power(ratio, P - 1.0);
}

// sign(x) as a factor: 0 for a zero, x itself (NaN) for a NaN; on the bits.
fn sign_factor(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    let magnitude = bits & 0x7fffffffu;
    if (magnitude == 0u) { return 0.0; }
    if (magnitude > 0x7f800000u) { return x; }
    return select(1.0, -1.0, bits >= 0x80000000u);
}

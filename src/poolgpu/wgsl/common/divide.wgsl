// u32 division by a divisor fixed for a dispatch, without an integer division instruction:
// on SIMD CPU adapters (lavapipe) a per-lane integer division runs lane by lane, while
// this multiplies and shifts all lanes at once.  The host computes (magic, shift) for
// divisor d (kernels.divisor_params, Granlund and Montgomery's round-up method); then for
// every u32 n, n / d = (t + ((n - t) >> 1)) >> shift with t = mul_high(n, magic) (d = 1:
// shift 0 and no halving).

// The high word of the 64-bit product a * b, from 16-bit halves (WGSL has no 64-bit
// integers): no partial sum below exceeds 2^32 - 1.
fn mul_high(a: u32, b: u32) -> u32 {
    let a_lo = a & 0xffffu;
    let a_hi = a >> 16u;
    let b_lo = b & 0xffffu;
    let b_hi = b >> 16u;
    let hi_lo = a_hi * b_lo;
    let cross = ((a_lo * b_lo) >> 16u) + (hi_lo & 0xffffu) + a_lo * b_hi;
    return a_hi * b_hi + (hi_lo >> 16u) + (cross >> 16u);
}

fn divide(n: u32, d: u32, magic: u32, shift: u32) -> u32 {
    let t = mul_high(n, magic);
    return (t + ((n - t) >> select(1u, 0u, d == 1u))) >> shift;
}

// Exact integer arithmetic wider than 32 bits, in u32 words (no shader-int64 needed):
// 32 x 32 -> 64-bit products, 64-bit shifts and 64 / 32-bit division, and Wide, a signed
// 192-bit integer for arithmetic on values up to f32's range (about 2^128) times a u32.

// a * b as vec2(low word, high word).
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;  let a1 = a >> 16u;
    let b0 = b & 0xffffu;  let b1 = b >> 16u;
    let low = a0 * b0;
    let cross0 = a0 * b1;
    let cross1 = a1 * b0;
    let mid = (low >> 16u) + (cross0 & 0xffffu) + (cross1 & 0xffffu);
    return vec2<u32>((low & 0xffffu) | (mid << 16u), a1 * b1 + (cross0 >> 16u) + (cross1 >> 16u) + (mid >> 16u));
}

// The 64-bit m = vec2(low, high) shifted right by k < 64.
fn shr_wide(m: vec2<u32>, k: u32) -> vec2<u32> {
    if (k == 0u) { return m; }
    if (k < 32u) { return vec2<u32>((m.x >> k) | (m.y << (32u - k)), m.y >> k); }
    return vec2<u32>(m.y >> (k - 32u), 0u);
}

// floor((high * 2^32 + low) / d) for high < d, so that the quotient fits in 32 bits.
fn div_wide(high: u32, low: u32, d: u32) -> u32 {
    if (high == 0u) { return low / d; }
    // Long division, one bit at a time; `carry` is the remainder's bit 32 (d may exceed 2^31).
    var remainder = high;
    var quotient = 0u;
    for (var bit = 31i; bit >= 0i; bit--) {
        let carry = remainder >> 31u;
        remainder = (remainder << 1u) | ((low >> u32(bit)) & 1u);
        quotient = quotient << 1u;
        if (carry != 0u || remainder >= d) {
            remainder -= d;
            quotient |= 1u;
        }
    }
    return quotient;
}

// Signed 192-bit integers, two's complement, least significant word first.
alias Wide = array<u32, 6>;

fn wide_of(v: u32) -> Wide {
    var w: Wide;
    w[0] = v;
    return w;
}

fn wide_add(a_: Wide, b_: Wide) -> Wide {
    var a = a_;
    var b = b_;
    var sum: Wide;
    var carry = 0u;
    for (var k = 0u; k < 6u; k++) {
        let partial = a[k] + b[k];
        let total = partial + carry;
        carry = select(0u, 1u, partial < a[k]) + select(0u, 1u, total < partial);
        sum[k] = total;
    }
    return sum;
}

fn wide_negate(a_: Wide) -> Wide {
    var a = a_;
    for (var k = 0u; k < 6u; k++) { a[k] = ~a[k]; }
    return wide_add(a, wide_of(1u));
}

// a * m: exact while |a| * m < 2^191 (two's complement products wrap consistently).
fn wide_mul(a_: Wide, m: u32) -> Wide {
    var a = a_;
    var product: Wide;
    var carry = 0u;
    for (var k = 0u; k < 6u; k++) {
        let p = mul_wide(a[k], m);
        let low = p.x + carry;
        carry = p.y + select(0u, 1u, low < p.x);
        product[k] = low;
    }
    return product;
}

fn wide_is_negative(a: Wide) -> bool { return (a[5] >> 31u) != 0u; }

fn wide_is_zero(a_: Wide) -> bool {
    var a = a_;
    var bits = 0u;
    for (var k = 0u; k < 6u; k++) { bits |= a[k]; }
    return bits == 0u;
}

// clamp(floor(a / d), 0, limit) for d >= 1.
fn wide_div_clamped(a_: Wide, d: u32, limit: u32) -> u32 {
    var a = a_;
    if (wide_is_negative(a)) { return 0u; }
    // a >= d * limit (at most 64 bits) gives at least `limit`.
    let bound = mul_wide(d, limit);
    let beyond = (a[2] | a[3] | a[4] | a[5]) != 0u || a[1] > bound.y || (a[1] == bound.y && a[0] >= bound.x);
    if (beyond) { return limit; }
    return div_wide(a[1], a[0], d);  // a < d * limit, so a[1] < d
}

// Fractional max pooling's windows (PyTorch's, from a plane's samples): the start of window i
// along a dimension, computed as PyTorch's CPU kernel computes it in the samples' type
// (fractional_bins.wgsl and fractional_table.wgsl say how).  Needs the samples' value type
// (to_f32, from_f32).

fn rounded(v: f32) -> f32 { return to_f32(from_f32(v)); }

// v as the nearest f32, ties to even (WGSL leaves the rounding of larger u32 open).
fn f32_of(v: u32) -> f32 {
    if (v < 0x1000000u) { return f32(v); }
    let shift = 8u - countLeadingZeros(v);   // keeps 24 significant bits
    let kept = v >> shift;
    let rest = v & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    let up = rest > half || (rest == half && (kept & 1u) == 1u);
    return f32(kept + u32(up)) * f32(1u << shift);   // (both exact)
}

// int(v) of a non-negative v (C's truncation); 0 for NaN.
fn truncated(v: f32) -> u32 {
    return select(0u, u32(min(v, 4294967040.0)), v > 0.0);
}

// The start of window i of `out` along a dimension (in, k: sizes; alpha: its f32 bits).
fn window_start(i: u32, u_raw: Raw, size_in: u32, k: u32, out: u32, alpha_bits: u32) -> u32 {
    let last = size_in - k;
    if (i + 1u >= out) { return last; }
    // u in [0, 1), on the bits: a negative sample or NaN gives 0, one of 1 or more the largest f32 below 1
    let bits = bitcast<u32>(to_f32(u_raw));
    let u = bitcast<f32>(select(0u, min(bits, 0x3f7fffffu), bits <= 0x7f800000u));
    let alpha = bitcast<f32>(alpha_bits);
    let a = truncated(rounded(rounded(rounded(f32_of(i)) + u) * alpha));
    let b = truncated(rounded(u * alpha));
    return min(select(0u, a - b, a > b), last);
}

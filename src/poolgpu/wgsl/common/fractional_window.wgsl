// Fractional max pooling's windows (PyTorch's, from a plane's samples): the start of window i
// along a dimension, computed as PyTorch's CPU kernel computes it in the samples' type
// (fractional_bins.wgsl says how).  Needs the samples' value type (to_f32, from_f32) and
// common/exact_f32.wgsl (f32_of).

fn rounded(v: f32) -> f32 { return to_f32(from_f32(v)); }

// C's int(v) as x86-64 computes it (cvttss2si), as u32 bits: toward zero; NaN and values
// outside i32's range (undefined in C++) give i32's minimum.
fn truncated(v: f32) -> u32 {
    return select(0x80000000u, bitcast<u32>(i32(v)), abs(v) < 2147483648.0);
}

// The start of window i of `out` along a dimension (in, k: sizes; alpha: its f32 bits).
fn window_start(i: u32, u_raw: Raw, size_in: u32, k: u32, out: u32, alpha_bits: u32) -> u32 {
    let last = size_in - k;
    if (i + 1u >= out) { return last; }
    let u = to_f32(u_raw);
    let alpha = bitcast<f32>(alpha_bits);
    let a = truncated(rounded(rounded(rounded(f32_of(i)) + u) * alpha));
    let b = truncated(rounded(u * alpha));
    let start = bitcast<i32>(a - b);   // (u32 arithmetic wraps, as int's does on x86-64)
    return u32(clamp(start, 0, i32(last)));
}

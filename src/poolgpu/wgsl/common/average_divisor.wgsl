// The divisor of an average window, per dimension, for the gradients' gathers: the
// window's size when padding counts (or no window reaches padding), else the number of
// its taps inside the input; its constants: common/average_divisor_constants.wgsl (the
// counted end padding passed per dimension as `end`: ED, EH, EW).  PyTorch's
// divisor_override replaces the whole product, see window_divisor.

// How many of window o's taps along one dimension fall inside the input [0, size) (with
// INCLUDE_PADDING: inside [-pad, size + end)).  The window covers the element being
// computed, so it starts before size.
fn divisor_taps(o: u32, taps: u32, stride: u32, dilation: u32, pad: u32, size: u32, end: u32) -> u32 {
    if (!PADDED || (INCLUDE_PADDING && !CLIP_DIVISOR)) { return taps; }
    let start = i32(o * stride) - i32(pad);
    if (INCLUDE_PADDING) {   // every window starts inside the start padding: clip its end only
        return min(taps - 1u, u32(i32(size + end) - 1 - start) / dilation) + 1u;
    }
    let first = select(0u, (u32(-start) + dilation - 1u) / dilation, start < 0);
    let last = min(taps - 1u, u32(i32(size) - 1 - start) / dilation);
    return last + 1u - first;
}

// The divisor of a window whose per-dimension counts are d, h and w: their product (exact in
// u32; past 2^32 - 1, WIDE_DIVISOR, taken in f32: within an ulp), or DIVISOR_OVERRIDE; kept
// as written (common/as_written.wgsl), so that no driver folds the division into a
// multiplication by a reciprocal.
fn window_divisor(d: u32, h: u32, w: u32) -> f32 {
    if (DIVISOR_OVERRIDE != 0u) { return divisor_as_written(DIVISOR_OVERRIDE); }
    if (WIDE_DIVISOR) { return as_written(as_written(f32(d) * f32(h)) * f32(w)); }
    return divisor_as_written(d * h * w);
}

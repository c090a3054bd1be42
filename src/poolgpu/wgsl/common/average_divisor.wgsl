// The divisor of an average window, per dimension, for the gradients' gathers: the
// window's size when padding counts (or no window reaches padding), else the number of
// its taps inside the input.  ONNX's and PyTorch's ceil_mode extend the end padding without
// counting the extension (CLIP_DIVISOR: padding counts only up to the counted end padding,
// passed per dimension as `end`: ED, EH, EW).  PyTorch's divisor_override replaces the
// whole product (DIVISOR_OVERRIDE; 0: none), see window_divisor.
override INCLUDE_PADDING: bool = false;
override CLIP_DIVISOR: bool = false;
override ED: u32 = 0u;  override EH: u32 = 0u;  override EW: u32 = 0u;
override DIVISOR_OVERRIDE: u32 = 0u;

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

// The divisor of a window whose per-dimension counts multiply to `count`.
fn window_divisor(count: u32) -> u32 {
    return select(count, DIVISOR_OVERRIDE, DIVISOR_OVERRIDE != 0u);
}

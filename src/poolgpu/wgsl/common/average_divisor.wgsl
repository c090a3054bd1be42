// The divisor of an average window, per dimension, for the gradients' gathers: the
// window's size when padding counts (or no window reaches padding), else the number of
// its taps inside the input.
override INCLUDE_PADDING: bool = false;

// How many of window o's taps along one dimension fall inside the input [0, size).  The
// window covers the element being computed, so it starts before size.
fn taps_inside(o: u32, taps: u32, stride: u32, dilation: u32, pad: u32, size: u32) -> u32 {
    if (INCLUDE_PADDING || !PADDED) { return taps; }
    let start = i32(o * stride) - i32(pad);
    let first = select(0u, (u32(-start) + dilation - 1u) / dilation, start < 0);
    let last = min(taps - 1u, u32(i32(size) - 1 - start) / dilation);
    return last + 1u - first;
}

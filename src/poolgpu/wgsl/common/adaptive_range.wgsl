// Adaptive pooling's bins (PyTorch's): along a dimension of `size_in` inputs pooled to
// `size_out` outputs, output o pools input [floor(o * in / out), ceil((o + 1) * in / out)).
// The products exceed 32 bits for large sizes, hence wide_int.wgsl's helpers.
//
// With in and out swapped the same formula gives the outputs whose bins cover input i:
// start(o) <= i  <=>  o < (i + 1) * out / in, and end(o) > i  <=>  o >= floor(i * out / in),
// so they are [floor(i * out / in), ceil((i + 1) * out / in)) = adaptive_range(i, out, in)
// (the adaptive gradients' gathers).
fn adaptive_range(o: u32, size_in: u32, size_out: u32) -> vec2<u32> {
    let first = mul_wide(o, size_in);
    // ceil(p / out) = floor((p + out - 1) / out); the quotients are at most `in`.
    let last = mul_wide(o + 1u, size_in);
    let low = last.x + (size_out - 1u);
    let high = last.y + select(0u, 1u, low < last.x);
    return vec2<u32>(div_wide(first.y, first.x, size_out), div_wide(high, low, size_out));
}

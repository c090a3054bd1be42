// Gathers over pooling windows (the gradients): which window's tap lands on a position.

// The window `o` along one dimension whose tap k lands on position i:
// o * stride - pad + k * dilation == i, with 0 <= o < count.
struct Window { o: u32, hit: bool }
fn window_of(i: u32, k: u32, stride: u32, dilation: u32, pad: u32, count: u32) -> Window {
    let t = i32(i + pad) - i32(k * dilation);
    let o = u32(t) / stride;
    return Window(o, t >= 0 && u32(t) % stride == 0u && o < count);
}

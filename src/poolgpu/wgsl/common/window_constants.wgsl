// The window geometry as override constants, shared by every kernel that walks or gathers
// over pooling windows: specialised per description, so window loops unroll and, without
// padding, bounds checks fold away.  poolgpu.kernels's window_constants sets them.

override KD: u32 = 1u;  override KH: u32 = 1u;  override KW: u32 = 1u;   // window size
override SD: u32 = 1u;  override SH: u32 = 1u;  override SW: u32 = 1u;   // strides
override LD: u32 = 1u;  override LH: u32 = 1u;  override LW: u32 = 1u;   // dilations
override PD: u32 = 0u;  override PH: u32 = 0u;  override PW: u32 = 0u;   // start padding
override PADDED: bool = true;   // some window reaches into padding

// Whether an element `offset` elements past a window's first tap is one of its `taps` taps
// (`dilation` apart) along a dimension.  (The forward rows and channels walks keep their
// own unsigned test: through this one, lavapipe's code for them grew, and the machine's
// noise could not show that it cost nothing.)
fn is_tap(offset: i32, dilation: u32, taps: u32) -> bool {
    return offset >= 0 && u32(offset) % dilation == 0u && u32(offset) / dilation < taps;
}

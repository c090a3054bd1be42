// What the three window walks (window_walk*.wgsl) and their accumulators share besides the
// window geometry (common/window_constants.wgsl): the uniform Params and output coordinates.
//
// Every tensor is seen as 5-D {N, C, D, H, W}; 1-D and 2-D pooling have unit D (and H).
// A walk feeds each output's window taps, in increasing flat index, to the operator's
// accumulator:
//     struct Tap; fn tap_of(raw: Raw) -> Tap;      // once per loaded input element
//     struct Acc; fn acc_new() -> Acc;
//     fn acc_for(at: Out) -> Acc;                  // the general walk's start of output at's window
//     fn acc_add(acc: Acc, t: Tap, index: u32, inside: bool) -> Acc;
//     fn acc_value(acc: Acc, at: Out) -> Raw;  fn acc_index(acc: Acc) -> u32;
// where `inside` says the tap is input data (not padding: its Tap is then a clamped
// neighbour's and must be ignored) and `index` is its flat logical input index.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

// The output element an accumulator finishes.
struct Out { n: u32, c: u32, d: u32, h: u32, w: u32 }

fn y_offset(at: Out) -> u32 {
    return params.y_base + at.n * params.y_n + at.c * params.y_c + at.d * params.y_d + at.h * params.y_h + at.w * params.y_w;
}

fn idx_offset(at: Out) -> u32 {
    return params.idx_base + at.n * params.idx_n + at.c * params.idx_c + at.d * params.idx_d + at.h * params.idx_h + at.w * params.idx_w;
}

// Position `start + k * dilation` along a dimension of `size`: the clamped coordinate to
// read (always inside the tensor) and whether it is real data.
struct Coord { at: u32, inside: bool }
fn coord(start: i32, k: u32, dilation: u32, size: u32) -> Coord {
    let p = start + i32(k * dilation);
    return Coord(u32(clamp(p, 0, i32(size) - 1)), !PADDED || (p >= 0 && p < i32(size)));
}

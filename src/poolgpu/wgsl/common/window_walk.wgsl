// The window walk shared by the forward fixed-window pooling kernels (max, average, Lp).
//
// Every tensor is seen as 5-D {N, C, D, H, W}; 1-D and 2-D pooling have unit D (and H).
// The window geometry arrives as override constants, so the window loops unroll and the
// bounds checks vanish when no window touches padding.  One invocation computes one output:
// it feeds every tap of its window, in increasing flat index, to the operator's accumulator
//     struct Acc; fn acc_new() -> Acc;
//     fn acc_add(acc: ptr<function, Acc>, raw: Raw, index: u32, inside: bool);
//     fn acc_store(acc: Acc, at: Out);
// where `inside` says the tap is input data (not padding; its `raw` is then a clamped
// neighbour's and must be ignored) and `index` is its flat logical input index.

override KD: u32 = 1u;  override KH: u32 = 1u;  override KW: u32 = 1u;   // window size
override SD: u32 = 1u;  override SH: u32 = 1u;  override SW: u32 = 1u;   // strides
override LD: u32 = 1u;  override LH: u32 = 1u;  override LW: u32 = 1u;   // dilations
override PD: u32 = 0u;  override PH: u32 = 0u;  override PW: u32 = 0u;   // start padding
override PADDED: bool = true;   // some window reaches into padding
override WG_X: u32 = 64u;

struct Params {
    x_base: u32, y_base: u32, idx_base: u32,
    channels: u32,
    in_d: u32, in_h: u32, in_w: u32,
    out_d: u32, out_h: u32, out_w: u32,
    x_n: u32, x_c: u32, x_d: u32, x_h: u32, x_w: u32,
    y_n: u32, y_c: u32, y_d: u32, y_h: u32, y_w: u32,
    idx_n: u32, idx_c: u32, idx_d: u32, idx_h: u32, idx_w: u32,
    rows: u32,          // N * C * out_d * out_h: one row of out_w outputs each
    rows_per_z: u32,    // rows are folded over workgroup y and z (each at most 65535)
}
@group(0) @binding(0) var<uniform> params: Params;

// The output element an invocation computes.
struct Out { n: u32, c: u32, d: u32, h: u32, w: u32 }

fn y_offset(at: Out) -> u32 {
    return params.y_base + at.n * params.y_n + at.c * params.y_c + at.d * params.y_d + at.h * params.y_h + at.w * params.y_w;
}

fn idx_offset(at: Out) -> u32 {
    return params.idx_base + at.n * params.idx_n + at.c * params.idx_c + at.d * params.idx_d + at.h * params.idx_h + at.w * params.idx_w;
}

// Position `o * stride - pad + k * dilation` along a dimension of `size`: the clamped
// coordinate to read (always inside the tensor) and whether it is real data.
struct Tap { at: u32, inside: bool }
fn tap(start: i32, k: u32, dilation: u32, size: u32) -> Tap {
    let p = start + i32(k * dilation);
    return Tap(u32(clamp(p, 0, i32(size) - 1)), !PADDED || (p >= 0 && p < i32(size)));
}

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let ow = wg.x * WG_X + lane;
    let row = wg.z * params.rows_per_z + wg.y;
    if (ow >= params.out_w || row >= params.rows) { return; }
    let oh = row % params.out_h;
    let od = (row / params.out_h) % params.out_d;
    let nc = row / (params.out_h * params.out_d);
    let at = Out(nc / params.channels, nc % params.channels, od, oh, ow);

    let x_plane = params.x_base + at.n * params.x_n + at.c * params.x_c;
    let logical_plane = nc * params.in_d * params.in_h * params.in_w;
    let d0 = i32(od * SD) - i32(PD);
    let h0 = i32(oh * SH) - i32(PH);
    let w0 = i32(ow * SW) - i32(PW);

    var acc = acc_new();
    for (var kd = 0u; kd < KD; kd++) {
        let d = tap(d0, kd, LD, params.in_d);
        for (var kh = 0u; kh < KH; kh++) {
            let h = tap(h0, kh, LH, params.in_h);
            for (var kw = 0u; kw < KW; kw++) {
                let w = tap(w0, kw, LW, params.in_w);
                let raw = x_load(x_plane + d.at * params.x_d + h.at * params.x_h + w.at * params.x_w);
                let index = logical_plane + (d.at * params.in_h + h.at) * params.in_w + w.at;
                acc_add(&acc, raw, index, d.inside && h.inside && w.inside);
            }
        }
    }
    acc_store(acc, at);
}

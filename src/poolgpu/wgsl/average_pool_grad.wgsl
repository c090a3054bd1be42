// Average pooling gradient (DirectML AVERAGE_POOLING_GRAD): a gather.
//
// One invocation owns one dx element: it visits, in a fixed order, every window that covers
// it and adds that window's dy / divisor (the window's size when padding counts, else the
// number of input elements it covers).  No atomics and a fixed summation order: the same
// inputs give bit-identical dx, run after run.  Sums are f32.
//
// Tensors are seen as 5-D {N, C, D, H, W}; the window geometry arrives as override
// constants, so the tap loops unroll.
//
// Prepended by kernels.py: the value type (Raw, to_f32, from_f32), window_of
// (common/windows_covering.wgsl) and the tensors dy (dy_load) and dx (dx_store).

override KD: u32 = 1u;  override KH: u32 = 1u;  override KW: u32 = 1u;   // window size
override SD: u32 = 1u;  override SH: u32 = 1u;  override SW: u32 = 1u;   // strides
override LD: u32 = 1u;  override LH: u32 = 1u;  override LW: u32 = 1u;   // dilations
override PD: u32 = 0u;  override PH: u32 = 0u;  override PW: u32 = 0u;   // start padding
override PADDED: bool = true;            // some window reaches into padding
override INCLUDE_PADDING: bool = false;  // the divisor counts padded positions too
override WG_X: u32 = 64u;

struct Params {
    dy_base: u32, dx_base: u32,
    channels: u32,
    in_d: u32, in_h: u32, in_w: u32,      // the forward input's (dx's) spatial sizes
    out_d: u32, out_h: u32, out_w: u32,   // the forward output's (dy's)
    dy_n: u32, dy_c: u32, dy_d: u32, dy_h: u32, dy_w: u32,
    dx_n: u32, dx_c: u32, dx_d: u32, dx_h: u32, dx_w: u32,
    rows: u32,          // N * C * in_d * in_h: one row of in_w dx elements each
    rows_per_z: u32,    // rows are folded over workgroup y and z (each at most 65535)
}
@group(0) @binding(0) var<uniform> params: Params;

// How many of window o's taps along one dimension fall inside the input [0, size).  The
// window covers the element being computed, so its start is at most size - 1.
fn taps_inside(o: u32, taps: u32, stride: u32, dilation: u32, pad: u32, size: u32) -> u32 {
    if (INCLUDE_PADDING || !PADDED) { return taps; }
    let start = i32(o * stride) - i32(pad);
    let first = select(0u, (u32(-start) + dilation - 1u) / dilation, start < 0);
    let last = min(taps - 1u, u32(i32(size) - 1 - start) / dilation);
    return last + 1u - first;
}

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let w = wg.x * WG_X + lane;
    let row = wg.z * params.rows_per_z + wg.y;
    if (w >= params.in_w || row >= params.rows) { return; }
    let h = row % params.in_h;
    let d = (row / params.in_h) % params.in_d;
    let nc = row / (params.in_h * params.in_d);
    let n = nc / params.channels;
    let c = nc % params.channels;

    let dy_plane = params.dy_base + n * params.dy_n + c * params.dy_c;
    var sum = 0.0;
    for (var kd = 0u; kd < KD; kd++) {
        let od = window_of(d, kd, SD, LD, PD, params.out_d);
        if (!od.hit) { continue; }
        let count_d = taps_inside(od.o, KD, SD, LD, PD, params.in_d);
        for (var kh = 0u; kh < KH; kh++) {
            let oh = window_of(h, kh, SH, LH, PH, params.out_h);
            if (!oh.hit) { continue; }
            let count_dh = count_d * taps_inside(oh.o, KH, SH, LH, PH, params.in_h);
            for (var kw = 0u; kw < KW; kw++) {
                let ow = window_of(w, kw, SW, LW, PW, params.out_w);
                if (!ow.hit) { continue; }
                let divisor = count_dh * taps_inside(ow.o, KW, SW, LW, PW, params.in_w);
                let dy = to_f32(dy_load(dy_plane + od.o * params.dy_d + oh.o * params.dy_h + ow.o * params.dy_w));
                sum += dy / f32(divisor);
            }
        }
    }
    dx_store(params.dx_base + n * params.dx_n + c * params.dx_c + d * params.dx_d + h * params.dx_h + w * params.dx_w,
             from_f32(sum));
}

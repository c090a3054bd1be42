// Max pooling: DirectML MAX_POOLING, MAX_POOLING1 (optional indices), MAX_POOLING2 (dilations).
//
// Every tensor is seen as 5-D {N, C, D, H, W}; 1-D and 2-D pooling have unit D (and H).
// The window geometry arrives as override constants, so the window loops unroll and the
// bounds checks vanish when no window touches padding.  One invocation computes one output.
//
// Prepended by kernels.py: the value type (Raw, Key, key_of, key_gt), the tensors
// x (x_load), y (y_store) and idx (idx_store_index; a no-op when no indices were asked for),
// and window_max (common/window_max.wgsl: the max rule).

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

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let ow = wg.x * WG_X + lane;
    let row = wg.z * params.rows_per_z + wg.y;
    if (ow >= params.out_w || row >= params.rows) { return; }
    let oh = row % params.out_h;
    let od = (row / params.out_h) % params.out_d;
    let nc = row / (params.out_h * params.out_d);
    let n = nc / params.channels;
    let c = nc % params.channels;

    let x_plane = params.x_base + n * params.x_n + c * params.x_c;
    let logical_plane = nc * params.in_d * params.in_h * params.in_w;
    let start = vec3<i32>(i32(od * SD) - i32(PD), i32(oh * SH) - i32(PH), i32(ow * SW) - i32(PW));
    let best = window_max(x_plane, logical_plane, start, vec3<u32>(params.in_d, params.in_h, params.in_w),
                          vec3<u32>(params.x_d, params.x_h, params.x_w));
    y_store(params.y_base + n * params.y_n + c * params.y_c + od * params.y_d + oh * params.y_h + ow * params.y_w, best.raw);
    idx_store_index(params.idx_base + n * params.idx_n + c * params.idx_c + od * params.idx_d + oh * params.idx_h + ow * params.idx_w, best.index);
}

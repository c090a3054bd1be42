// Average pooling gradient (DirectML AVERAGE_POOLING_GRAD) when dx is contiguous along W:
// the gather of average_pool_grad.wgsl, four dx elements per invocation (see
// common/gather_rows.wgsl).  Each dx element sums, in a fixed order, dy / divisor of the
// windows covering it (the divisor: the window's size when padding counts, else the number
// of input elements it covers).
//
// Prepended by kernels.py: the value type (Raw, to_f32, from_f32) and the tensors
// dy (dy_load) and dx (dx_store4); library: grid.wgsl, gather_rows.wgsl.

struct Params {
    dy_base: u32, dx_base: u32,
    channels: u32,
    in_d: u32, in_h: u32, in_w: u32,      // the forward input's (dx's) spatial sizes
    out_d: u32, out_h: u32, out_w: u32,   // the forward output's (dy's)
    dy_n: u32, dy_c: u32, dy_d: u32, dy_h: u32, dy_w: u32,
    dx_n: u32, dx_c: u32, dx_d: u32, dx_h: u32, dx_w: u32,
    columns: u32, lines: u32, line_groups: u32, planes: u32, plane_origin: u32,   // the grid (common/grid.wgsl)
}
@group(0) @binding(0) var<uniform> params: Params;

// Whether window column ow's taps reach input column w (w = ow * SW - PW + kw * LW).
fn covers(ow: u32, w: u32) -> bool {
    let num = i32(w + PW) - i32(ow * SW);
    return num >= 0 && u32(num) % LW == 0u && u32(num) / LW < KW;
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let quad = dx_quad(wg, lid);
    if (!quad.inside) { return; }
    let n = quad.n;  let c = quad.c;  let nc = quad.nc;
    let d = quad.d;  let h = quad.h;  let w0 = quad.w0;

    let ow_first = first_column(w0);
    var sum = vec4<f32>(0.0);
    for (var kd = 0u; kd < KD; kd++) {
        let od = window_of(d, kd, SD, LD, PD, params.out_d);
        if (!od.hit) { continue; }
        let count_d = taps_inside(od.o, KD, SD, LD, PD, params.in_d);
        for (var kh = 0u; kh < KH; kh++) {
            let oh = window_of(h, kh, SH, LH, PH, params.out_h);
            if (!oh.hit) { continue; }
            let count_dh = count_d * taps_inside(oh.o, KH, SH, LH, PH, params.in_h);
            let dy_row = params.dy_base + n * params.dy_n + c * params.dy_c + od.o * params.dy_d + oh.o * params.dy_h;
            for (var j = NOW; j > 0u; j--) {
                let ow = ow_first + j - 1u;
                let at = min(ow, params.out_w - 1u);
                let share = to_f32(dy_load(dy_row + at * params.dy_w))
                            / f32(count_dh * taps_inside(at, KW, SW, LW, PW, params.in_w));
                let hit = vec4<bool>(covers(ow, w0), covers(ow, w0 + 1u), covers(ow, w0 + 2u), covers(ow, w0 + 3u));
                sum += select(vec4<f32>(0.0), vec4<f32>(share), hit & vec4<bool>(ow < params.out_w));
            }
        }
    }
    let dx_row = params.dx_base + n * params.dx_n + c * params.dx_c + d * params.dx_d + h * params.dx_h;
    dx_store4(dx_row + w0, array<Raw, 4>(from_f32(sum.x), from_f32(sum.y), from_f32(sum.z), from_f32(sum.w)));
}

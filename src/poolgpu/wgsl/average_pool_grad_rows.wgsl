// Average pooling gradient (DirectML AVERAGE_POOLING_GRAD) when dx and dy are contiguous
// along W: the gather of average_pool_grad.wgsl, eight dx elements per invocation from
// 4-element chunks of dy (see common/gather_rows.wgsl).  Each dx element sums, in a fixed
// order, dy / divisor of the windows covering it (the divisor: the window's size when
// padding counts, else the number of input elements it covers).
//
// Prepended by kernels.py: the value type (Raw, to_f32, from_f32) and the tensors
// dy (dy_load4) and dx (dx_store4); library: grid.wgsl, average_divisor.wgsl, gather_rows.wgsl.

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

// Window column ow's share (dy over the divisor of its rows, count_dh, and of its columns)
// added to the eight dx elements it covers; a column past the row covers none.
fn gather_column(sums: Eight, ow: u32, dy: Raw, count_dh: u32, w0: u32) -> Eight {
    let share = to_f32(dy) / f32(count_dh * taps_inside(ow, KW, SW, LW, PW, params.in_w));
    let real = ow < params.out_w;
    let lo = vec4<bool>(covers(ow, w0), covers(ow, w0 + 1u), covers(ow, w0 + 2u), covers(ow, w0 + 3u));
    let hi = vec4<bool>(covers(ow, w0 + 4u), covers(ow, w0 + 5u), covers(ow, w0 + 6u), covers(ow, w0 + 7u));
    return add_where(sums, share, lo & vec4<bool>(real), hi & vec4<bool>(real));
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let block = dx_block(wg, lid);
    if (!block.inside) { return; }
    let n = block.n;  let c = block.c;  let nc = block.nc;
    let d = block.d;  let h = block.h;  let w0 = block.w0;

    let first_chunk = first_column(w0) / 4u;
    let last_chunk = params.out_w / 4u - 1u;
    var sums = Eight(vec4<f32>(0.0), vec4<f32>(0.0));
    for (var kd = 0u; kd < KD; kd++) {
        let od = window_of(d, kd, SD, LD, PD, params.out_d);
        if (!od.hit) { continue; }
        let count_d = taps_inside(od.o, KD, SD, LD, PD, params.in_d);
        for (var kh = 0u; kh < KH; kh++) {
            let oh = window_of(h, kh, SH, LH, PH, params.out_h);
            if (!oh.hit) { continue; }
            let count_dh = count_d * taps_inside(oh.o, KH, SH, LH, PH, params.in_h);
            let dy_row = params.dy_base + n * params.dy_n + c * params.dy_c + od.o * params.dy_d + oh.o * params.dy_h;
            for (var j = DY_CHUNKS; j > 0u; j--) {
                let ow = 4u * (first_chunk + j - 1u);   // the chunk's first column
                let dy = dy_load4(dy_row + 4u * min(ow / 4u, last_chunk));   // (clamped: then no column is real)
                sums = gather_column(sums, ow + 3u, dy[3], count_dh, w0);
                sums = gather_column(sums, ow + 2u, dy[2], count_dh, w0);
                sums = gather_column(sums, ow + 1u, dy[1], count_dh, w0);
                sums = gather_column(sums, ow, dy[0], count_dh, w0);
            }
        }
    }
    store_eight(params.dx_base + n * params.dx_n + c * params.dx_c + d * params.dx_d + h * params.dx_h, w0, sums);
}

// Max pooling gradient (DirectML MAX_POOLING_GRAD), pass 2 of 2 when dx is contiguous
// along W: the gather of max_pool_grad.wgsl, four dx elements per invocation (see
// common/gather_rows.wgsl).  Each dx element sums, in a fixed order, the dy of the windows
// whose argmax (written by pass 1 into the packed scratch `arg`) is that element.
//
// Prepended by kernels.py: the value type (Raw, to_f32, from_f32) and the tensors
// dy (dy_load), arg (arg_load) and dx (dx_store4); library: grid.wgsl, gather_rows.wgsl.

struct Params {
    dy_base: u32, arg_base: u32, dx_base: u32,
    channels: u32,
    in_d: u32, in_h: u32, in_w: u32,      // the forward input's (dx's) spatial sizes
    out_d: u32, out_h: u32, out_w: u32,   // the forward output's (dy's, arg's)
    dy_n: u32, dy_c: u32, dy_d: u32, dy_h: u32, dy_w: u32,
    dx_n: u32, dx_c: u32, dx_d: u32, dx_h: u32, dx_w: u32,
    columns: u32, lines: u32, line_groups: u32, planes: u32, plane_origin: u32,   // the grid (common/grid.wgsl)
}
@group(0) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let quad = dx_quad(wg, lid);
    if (!quad.inside) { return; }
    let n = quad.n;  let c = quad.c;  let nc = quad.nc;
    let d = quad.d;  let h = quad.h;  let w0 = quad.w0;

    let me = ((nc * params.in_d + d) * params.in_h + h) * params.in_w + w0;  // as pass 1 wrote it
    let ow_first = first_column(w0);
    var sum = vec4<f32>(0.0);
    for (var kd = 0u; kd < KD; kd++) {
        let od = window_of(d, kd, SD, LD, PD, params.out_d);
        if (!od.hit) { continue; }
        for (var kh = 0u; kh < KH; kh++) {
            let oh = window_of(h, kh, SH, LH, PH, params.out_h);
            if (!oh.hit) { continue; }
            let arg_row = params.arg_base + ((nc * params.out_d + od.o) * params.out_h + oh.o) * params.out_w;
            let dy_row = params.dy_base + n * params.dy_n + c * params.dy_c + od.o * params.dy_d + oh.o * params.dy_h;
            for (var j = NOW; j > 0u; j--) {
                let ow = ow_first + j - 1u;
                let inside = ow < params.out_w;
                let at = min(ow, params.out_w - 1u);
                let arg = select(0xffffffffu, arg_load(arg_row + at), inside);
                let dy = to_f32(dy_load(dy_row + at * params.dy_w));
                sum += select(vec4<f32>(0.0), vec4<f32>(dy), vec4<u32>(arg) == me + vec4<u32>(0u, 1u, 2u, 3u));
            }
        }
    }
    let dx_row = params.dx_base + n * params.dx_n + c * params.dx_c + d * params.dx_d + h * params.dx_h;
    dx_store4(dx_row + w0, array<Raw, 4>(from_f32(sum.x), from_f32(sum.y), from_f32(sum.z), from_f32(sum.w)));
}

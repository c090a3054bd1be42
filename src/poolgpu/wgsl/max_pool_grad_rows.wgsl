// Max pooling gradient (DirectML MAX_POOLING_GRAD), pass 2 of 2 when dx, dy and the argmax
// are contiguous along W: the gather of max_pool_grad.wgsl, eight dx elements per
// invocation from 4-element chunks of dy and the argmax (see common/gather_rows.wgsl).
// Each dx element sums, in a fixed order, the dy of the windows whose argmax (written by
// pass 1 into the packed scratch `arg`) is that element.
//
// Prepended by kernels.py: the value type (Raw, to_f32, from_f32) and the tensors
// dy (dy_load4), arg (arg_load4) and dx (dx_store4); library: grid.wgsl, gather_rows.wgsl.

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

// Window column ow's dy added to whichever of the eight dx elements is its argmax.
fn gather_column(sums: Eight, arg: u32, dy: Raw, me: u32) -> Eight {
    let at = vec4<u32>(arg - me);   // the argmax's place from w0 (wrapping: huge when before)
    return add_where(sums, to_f32(dy), at == vec4<u32>(0u, 1u, 2u, 3u), at == vec4<u32>(4u, 5u, 6u, 7u));
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let block = dx_block(wg, lid);
    if (!block.inside) { return; }
    let n = block.n;  let c = block.c;  let nc = block.nc;
    let d = block.d;  let h = block.h;  let w0 = block.w0;

    let me = ((nc * params.in_d + d) * params.in_h + h) * params.in_w + w0;  // as pass 1 wrote it
    let first_chunk = first_column(w0) / 4u;
    let last_chunk = params.out_w / 4u - 1u;
    var sums = Eight(vec4<f32>(0.0), vec4<f32>(0.0));
    for (var kd = 0u; kd < KD; kd++) {
        let od = window_of(d, kd, SD, LD, PD, params.out_d);
        if (!od.hit) { continue; }
        for (var kh = 0u; kh < KH; kh++) {
            let oh = window_of(h, kh, SH, LH, PH, params.out_h);
            if (!oh.hit) { continue; }
            let arg_row = params.arg_base + ((nc * params.out_d + od.o) * params.out_h + oh.o) * params.out_w;
            let dy_row = params.dy_base + n * params.dy_n + c * params.dy_c + od.o * params.dy_d + oh.o * params.dy_h;
            for (var j = DY_CHUNKS; j > 0u; j--) {
                let chunk = first_chunk + j - 1u;
                let at = 4u * min(chunk, last_chunk);
                // a chunk past the row (clamped into it) is no window: its argmax matches nothing
                let a = arg_load4(arg_row + at);
                let arg = select(vec4<u32>(0xffffffffu), vec4<u32>(a[0], a[1], a[2], a[3]), chunk <= last_chunk);
                let dy = dy_load4(dy_row + at);
                sums = gather_column(sums, arg.w, dy[3], me);
                sums = gather_column(sums, arg.z, dy[2], me);
                sums = gather_column(sums, arg.y, dy[1], me);
                sums = gather_column(sums, arg.x, dy[0], me);
            }
        }
    }
    store_eight(params.dx_base + n * params.dx_n + c * params.dx_c + d * params.dx_d + h * params.dx_h, w0, sums);
}

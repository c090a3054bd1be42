// Max pooling gradient, pass 2 of 2, where dy, dx and the argmax are channels-last with C a
// multiple of 4: the gather of max_pool_grad.wgsl for four channels at once (lanes along
// channel groups, CHANNELS_PER_LANE = 4), dy and the argmax read and dx written as
// 4-element chunks.  The same windows in the same order: the same bits.
//
// Prepended by kernels.py: the value type (Raw, to_f32, from_f32) and the tensors
// dy (dy_load4), arg (arg_load4) and dx (dx_store4); library: window_constants.wgsl,
// windows_covering.wgsl (block_of with CHANNEL_LANES, first_tap, block_window), row_grid.wgsl.

override WG_X: u32 = 64u;

struct Params {
    dy_base: u32, arg_base: u32, dx_base: u32,
    channels: u32,
    in_d: u32, in_h: u32, in_w: u32,      // the forward input's (dx's) spatial sizes
    out_d: u32, out_h: u32, out_w: u32,   // the forward output's (dy's, arg's)
    blocks_d: u32, blocks_h: u32, blocks_w: u32,
    dy_n: u32, dy_c: u32, dy_d: u32, dy_h: u32, dy_w: u32,
    dx_n: u32, dx_c: u32, dx_d: u32, dx_h: u32, dx_w: u32,
    arg_n: u32, arg_c: u32, arg_d: u32, arg_h: u32, arg_w: u32,
    // rows of blocks_w blocks, N * C * blocks_d * blocks_h in all (common/row_grid.wgsl)
    column_groups: u32, rows: u32, row_origin: u32,
}
@group(0) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let block = block_of(wg, lane);
    if (!block.inside) { return; }
    let bd = block.d;  let bh = block.h;  let bw = block.w;
    let nc = block.nc;  let n = block.n;  let c = block.c;

    let arg_plane = params.arg_base + n * params.arg_n + c * params.arg_c;
    let dy_plane = params.dy_base + n * params.dy_n + c * params.dy_c;
    let dx_plane = params.dx_base + n * params.dx_n + c * params.dx_c;
    for (var rd = 0u; rd < SD; rd++) {
        let d = block_element(bd, rd, SD, PD, params.in_d);
        if (!d.inside) { continue; }
        for (var rh = 0u; rh < SH; rh++) {
            let h = block_element(bh, rh, SH, PH, params.in_h);
            if (!h.inside) { continue; }
            for (var rw = 0u; rw < SW; rw++) {
                let w = block_element(bw, rw, SW, PW, params.in_w);
                if (!w.inside) { continue; }
                // the four channels' own flat indices, planes apart (as pass 1 wrote them)
                let me = ((nc * params.in_d + d.at) * params.in_h + h.at) * params.in_w + w.at
                         + vec4<u32>(0u, 1u, 2u, 3u) * (params.in_d * params.in_h * params.in_w);
                var sum = vec4<f32>(0.0);
                for (var kd = first_tap(rd, SD, TD, ID); kd < KD; kd += TD) {
                    let od = block_window(bd, rd, kd, SD, LD, PD, params.out_d);
                    if (!od.hit) { continue; }
                    for (var kh = first_tap(rh, SH, TH, IH); kh < KH; kh += TH) {
                        let oh = block_window(bh, rh, kh, SH, LH, PH, params.out_h);
                        if (!oh.hit) { continue; }
                        for (var kw = first_tap(rw, SW, TW, IW); kw < KW; kw += TW) {
                            let ow = block_window(bw, rw, kw, SW, LW, PW, params.out_w);
                            if (!ow.hit) { continue; }
                            let a = arg_load4(arg_plane + od.o * params.arg_d + oh.o * params.arg_h + ow.o * params.arg_w);
                            let g = dy_load4(dy_plane + od.o * params.dy_d + oh.o * params.dy_h + ow.o * params.dy_w);
                            let dy = vec4<f32>(to_f32(g[0]), to_f32(g[1]), to_f32(g[2]), to_f32(g[3]));
                            sum += select(vec4<f32>(0.0), dy, vec4<u32>(a[0], a[1], a[2], a[3]) == me);
                        }
                    }
                }
                dx_store4(dx_plane + d.at * params.dx_d + h.at * params.dx_h + w.at * params.dx_w,
                          array<Raw, 4>(from_f32(sum.x), from_f32(sum.y), from_f32(sum.z), from_f32(sum.w)));
            }
        }
    }
}

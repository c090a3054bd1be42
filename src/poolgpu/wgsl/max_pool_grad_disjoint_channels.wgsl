// Max pooling gradient where windows do not overlap (as max_pool_grad_disjoint.wgsl) over
// channels-last x, dy and dx with C a multiple of 4: one invocation owns the block of four
// neighbouring channels (lanes along channel groups, CHANNELS_PER_LANE = 4), so x and dy
// are read and dx written as 4-element chunks (the block pass reads and writes element by
// element).  Same argmax rule, same bits.
//
// Requires (kernels.py checks): x, dy and dx contiguous along C, with steps and the
// tensors' starts at multiples of 4 elements.
//
// Prepended by kernels.py: the value type (Raw, Key, key_of, key_gt) and the tensors
// x (x_load4), dy (dy_load4) and dx (dx_store4); library: window_constants.wgsl,
// windows_covering.wgsl (block_element, block_of), max_accumulator.wgsl, row_grid.wgsl,
// disjoint_gradient.wgsl (Params).

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let block = block_of(wg, lane);
    if (!block.inside) { return; }
    let bd = block.d;  let bh = block.h;  let bw = block.w;

    // The block's own window o starts where the block does: tap k is block element k * dilation.
    let o = vec3<u32>(bd + PD / SD, bh + PH / SH, bw + PW / SW);
    let has_window = o.x < params.out_d && o.y < params.out_h && o.z < params.out_w;
    let x_plane = params.x_base + block.n * params.x_n + block.c * params.x_c;
    let plane = params.in_d * params.in_h * params.in_w;   // channel c + 1's indices are a plane on
    var acc = array<Acc, 4>(acc_new(), acc_new(), acc_new(), acc_new());
    for (var kd = 0u; kd < KD; kd++) {
        let d = block_element(bd, kd * LD, SD, PD, params.in_d);
        for (var kh = 0u; kh < KH; kh++) {
            let h = block_element(bh, kh * LH, SH, PH, params.in_h);
            for (var kw = 0u; kw < KW; kw++) {
                let w = block_element(bw, kw * LW, SW, PW, params.in_w);
                let inside = d.inside && h.inside && w.inside;
                let raw = x_load4(x_plane + select(0u, d.at * params.x_d + h.at * params.x_h + w.at * params.x_w, inside));
                let index = ((block.nc * params.in_d + d.at) * params.in_h + h.at) * params.in_w + w.at;
                acc[0] = acc_add(acc[0], tap_of(raw[0]), index, inside);
                acc[1] = acc_add(acc[1], tap_of(raw[1]), index + plane, inside);
                acc[2] = acc_add(acc[2], tap_of(raw[2]), index + 2u * plane, inside);
                acc[3] = acc_add(acc[3], tap_of(raw[3]), index + 3u * plane, inside);
            }
        }
    }
    let winner = vec4<u32>(
        select(0xffffffffu, acc[0].index, has_window && acc[0].found),
        select(0xffffffffu, acc[1].index, has_window && acc[1].found),
        select(0xffffffffu, acc[2].index, has_window && acc[2].found),
        select(0xffffffffu, acc[3].index, has_window && acc[3].found));
    let dy = dy_load4(params.dy_base + block.n * params.dy_n + block.c * params.dy_c
                      + select(0u, o.x * params.dy_d + o.y * params.dy_h + o.z * params.dy_w, has_window));

    let dx_plane = params.dx_base + block.n * params.dx_n + block.c * params.dx_c;
    for (var rd = 0u; rd < SD; rd++) {
        let d = block_element(bd, rd, SD, PD, params.in_d);
        if (!d.inside) { continue; }
        for (var rh = 0u; rh < SH; rh++) {
            let h = block_element(bh, rh, SH, PH, params.in_h);
            if (!h.inside) { continue; }
            for (var rw = 0u; rw < SW; rw++) {
                let w = block_element(bw, rw, SW, PW, params.in_w);
                if (!w.inside) { continue; }
                let me = ((block.nc * params.in_d + d.at) * params.in_h + h.at) * params.in_w + w.at
                         + vec4<u32>(0u, 1u, 2u, 3u) * plane;
                let mine = me == winner;
                dx_store4(dx_plane + d.at * params.dx_d + h.at * params.dx_h + w.at * params.dx_w, array<Raw, 4>(
                    select(Raw(), dy[0], mine.x), select(Raw(), dy[1], mine.y),
                    select(Raw(), dy[2], mine.z), select(Raw(), dy[3], mine.w)));
            }
        }
    }
}

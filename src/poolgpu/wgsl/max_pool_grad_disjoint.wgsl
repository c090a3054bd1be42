// Max pooling gradient (DirectML MAX_POOLING_GRAD) where windows do not overlap (stride >=
// dilated extent in every dimension): one pass, no scratch.
//
// Every dx element lies in at most one window, so there is nothing to sum: one invocation
// owns a block of SD x SH x SW dx elements (common/windows_covering.wgsl) holding all of
// its window (if the window exists), finds the window's argmax under the forward max rule
// (common/max_accumulator.wgsl) and writes dy's bits there and zero elsewhere in the block.
// Deterministic by construction, with no scratch and less memory traffic than the two
// passes of the general case (max_pool_grad.wgsl).
//
// One channel per invocation, or four over channels-last tensors with C a multiple of 4,
// read and written in 4-element chunks (the lanes: common/disjoint_lanes*.wgsl).
//
// Prepended by poolgpu.kernels: the value type (Raw, Key, key_of, key_gt) and the tensors
// x, dy and dx; library: x_lanes, dy_lanes, dx_lanes (the lanes), block_element
// (common/windows_covering.wgsl), the max rule's acc_new and acc_add (common/max_accumulator.wgsl),
// Params (common/disjoint_gradient.wgsl).

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let block = block_of(wg, lane);
    if (!block.inside) { return; }
    let bd = block.d;  let bh = block.h;  let bw = block.w;
    let nc = block.nc;  let n = block.n;  let c = block.c;

    // The block's own window o starts where the block does: tap k is block element k * dilation.
    let o = vec3<u32>(bd + PD / SD, bh + PH / SH, bw + PW / SW);
    let has_window = o.x < params.out_d && o.y < params.out_h && o.z < params.out_w;
    let x_plane = params.x_base + n * params.x_n + c * params.x_c;
    let plane = params.in_d * params.in_h * params.in_w;   // lane i's channel: its indices i planes on
    var acc = array<Acc, 4>(acc_new(), acc_new(), acc_new(), acc_new());
    for (var kd = 0u; kd < KD; kd++) {
        let d = block_element(bd, kd * LD, SD, PD, params.in_d);
        for (var kh = 0u; kh < KH; kh++) {
            let h = block_element(bh, kh * LH, SH, PH, params.in_h);
            for (var kw = 0u; kw < KW; kw++) {
                let w = block_element(bw, kw * LW, SW, PW, params.in_w);
                let inside = d.inside && h.inside && w.inside;
                let raw = x_lanes(x_plane + select(0u, d.at * params.x_d + h.at * params.x_h + w.at * params.x_w, inside));
                let index = ((nc * params.in_d + d.at) * params.in_h + h.at) * params.in_w + w.at;
                // (the lanes written out: an array indexed by a loop variable lives in memory,
                // local memory on GPUs; LANES is a constant, so the branch folds)
                acc[0] = acc_add(acc[0], tap_of(raw.x), index, inside);
                if (LANES == 4u) {
                    acc[1] = acc_add(acc[1], tap_of(raw.y), index + plane, inside);
                    acc[2] = acc_add(acc[2], tap_of(raw.z), index + 2u * plane, inside);
                    acc[3] = acc_add(acc[3], tap_of(raw.w), index + 3u * plane, inside);
                }
            }
        }
    }
    // (lanes past LANES: no window found, no winner)
    let winner = vec4<u32>(winner_of(acc[0], has_window), winner_of(acc[1], has_window),
                           winner_of(acc[2], has_window), winner_of(acc[3], has_window));
    let dy = dy_lanes(params.dy_base + n * params.dy_n + c * params.dy_c
                      + select(0u, o.x * params.dy_d + o.y * params.dy_h + o.z * params.dy_w, has_window));

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
                let me = ((nc * params.in_d + d.at) * params.in_h + h.at) * params.in_w + w.at
                         + vec4<u32>(0u, 1u, 2u, 3u) * plane;
                dx_lanes(dx_plane + d.at * params.dx_d + h.at * params.dx_h + w.at * params.dx_w,
                         select(vec4<u32>(0u), dy, me == winner));
            }
        }
    }
}

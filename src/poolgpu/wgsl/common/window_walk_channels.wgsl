// The window walk for tensors contiguous along C (channels last: NHWC, NDHWC, NWC; see
// window_geometry.wgsl): one invocation computes the outputs of four neighbouring channels
// c0 .. c0 + 3 at one position, reading each window tap's four
// channels at once (one 16-byte load for 32-bit types).
//
// Requires (kernels.py checks): x and y (and idx) contiguous along C, positions and the
// tensors' starts at multiples of 4 elements; C a multiple of 4.

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let pos = grid_position(wg, lid);   // (c0 / 4, ow, (n, od, oh))
    if (pos.x >= params.columns) { return; }
    let c0 = 4u * pos.x;
    let ow = pos.y;
    let oh = pos.z % params.out_h;
    let od = (pos.z / params.out_h) % params.out_d;
    let n = pos.z / (params.out_h * params.out_d);

    let x_start = params.x_base + n * params.x_n + c0;
    let plane_size = params.in_d * params.in_h * params.in_w;
    let logical_start = (n * params.channels + c0) * plane_size;
    let d0 = i32(od * SD) - i32(PD);
    let h0 = i32(oh * SH) - i32(PH);
    let w0 = i32(ow * SW) - i32(PW);

    var acc = array<Acc, 4>(acc_new(), acc_new(), acc_new(), acc_new());
    for (var kd = 0u; kd < KD; kd++) {
        let d = coord(d0, kd, LD, params.in_d);
        for (var kh = 0u; kh < KH; kh++) {
            let h = coord(h0, kh, LH, params.in_h);
            for (var kw = 0u; kw < KW; kw++) {
                let w = coord(w0, kw, LW, params.in_w);
                let chunk = x_load4(x_start + d.at * params.x_d + h.at * params.x_h + w.at * params.x_w);
                let spatial = (d.at * params.in_h + h.at) * params.in_w + w.at;
                let inside = d.inside && h.inside && w.inside;
                let index = logical_start + spatial;   // channel c0's; c0 + v's is v planes on
                acc[0] = acc_add(acc[0], tap_of(chunk[0]), index, inside);
                acc[1] = acc_add(acc[1], tap_of(chunk[1]), index + plane_size, inside);
                acc[2] = acc_add(acc[2], tap_of(chunk[2]), index + 2u * plane_size, inside);
                acc[3] = acc_add(acc[3], tap_of(chunk[3]), index + 3u * plane_size, inside);
            }
        }
    }
    // (array values built in place: naga rejects a `var` array passed by value)
    let values = array<Raw, 4>(
        acc_value(acc[0], Out(n, c0 + 0, od, oh, ow)),
        acc_value(acc[1], Out(n, c0 + 1, od, oh, ow)),
        acc_value(acc[2], Out(n, c0 + 2, od, oh, ow)),
        acc_value(acc[3], Out(n, c0 + 3, od, oh, ow)));
    let indices = array<u32, 4>(acc_index(acc[0]), acc_index(acc[1]), acc_index(acc[2]), acc_index(acc[3]));
    let at = Out(n, c0, od, oh, ow);
    y_store4(y_offset(at), values);
    idx_store4_index(idx_offset(at), indices);
}

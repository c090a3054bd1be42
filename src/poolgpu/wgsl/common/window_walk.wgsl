// The general window walk (see window_geometry.wgsl): one invocation per output, tensors
// of any strides.

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let pos = grid_position(wg, lid);   // (ow, oh, (n, c, od))
    if (pos.x >= params.columns) { return; }
    let ow = pos.x;
    let oh = pos.y;
    let od = pos.z % params.out_d;
    let nc = pos.z / params.out_d;
    let at = Out(nc / params.channels, nc % params.channels, od, oh, ow);

    let x_plane = params.x_base + at.n * params.x_n + at.c * params.x_c;
    let logical_plane = nc * params.in_d * params.in_h * params.in_w;
    let d0 = i32(od * SD) - i32(PD);
    let h0 = i32(oh * SH) - i32(PH);
    let w0 = i32(ow * SW) - i32(PW);

    var acc = acc_new();
    for (var kd = 0u; kd < KD; kd++) {
        let d = coord(d0, kd, LD, params.in_d);
        for (var kh = 0u; kh < KH; kh++) {
            let h = coord(h0, kh, LH, params.in_h);
            for (var kw = 0u; kw < KW; kw++) {
                let w = coord(w0, kw, LW, params.in_w);
                let raw = x_load(x_plane + d.at * params.x_d + h.at * params.x_h + w.at * params.x_w);
                let index = logical_plane + (d.at * params.in_h + h.at) * params.in_w + w.at;
                acc = acc_add(acc, tap_of(raw), index, d.inside && h.inside && w.inside);
            }
        }
    }
    y_store(y_offset(at), acc_value(acc, at));
    idx_store_index(idx_offset(at), acc_index(acc));
}

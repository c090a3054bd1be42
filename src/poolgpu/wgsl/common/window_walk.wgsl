// The general window walk (see window_geometry.wgsl): one invocation per output, tensors
// of any strides; with PAIRS, two neighbouring outputs along W per invocation (kernels.py
// sets it on GPUs for 16-bit outputs: a pair sharing a word is stored at once, where one
// output per invocation needs two word atomics per element; an H100, float16 max: A 0.225
// -> 0.209 ms, B 0.135 -> 0.111 ms).

override PAIRS: bool = false;

// The accumulator of output `at`'s window (x_plane: its input plane's first element).
fn window_of(at: Out, x_plane: u32, logical_plane: u32) -> Acc {
    let d0 = i32(at.d * SD) - i32(PD);
    let h0 = i32(at.h * SH) - i32(PH);
    let w0 = i32(at.w * SW) - i32(PW);
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
    return acc;
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let pos = grid_position(wg, lid);   // (ow, or ow / 2 with PAIRS; oh, (n, c, od))
    if (pos.x >= params.columns) { return; }
    let ow = select(pos.x, 2u * pos.x, PAIRS);
    let od = pos.z % params.out_d;
    let nc = pos.z / params.out_d;
    let at = Out(nc / params.channels, nc % params.channels, od, pos.y, ow);
    let x_plane = params.x_base + at.n * params.x_n + at.c * params.x_c;
    let logical_plane = nc * params.in_d * params.in_h * params.in_w;

    let acc = window_of(at, x_plane, logical_plane);
    let y = y_offset(at);
    let idx = idx_offset(at);
    if (!PAIRS) {
        y_store(y, acc_value(acc, at));
        idx_store_index(idx, acc_index(acc));
        return;
    }
    let next = Out(at.n, at.c, od, pos.y, ow + 1u);
    if (next.w >= params.out_w) {   // an odd row's last output: alone
        y_store(y, acc_value(acc, at));
        idx_store_index(idx, acc_index(acc));
        return;
    }
    let acc1 = window_of(next, x_plane, logical_plane);
    if (params.y_w == 1u && (y & 1u) == 0u) {
        y_store_pair(y, acc_value(acc, at), acc_value(acc1, next));
    } else {
        y_store(y, acc_value(acc, at));
        y_store(y + params.y_w, acc_value(acc1, next));
    }
    idx_store_index(idx, acc_index(acc));
    idx_store_index(idx + params.idx_w, acc_index(acc1));
}

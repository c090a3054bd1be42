// The general window walk (see window_geometry.wgsl): tensors of any strides, OUTPUTS
// neighbouring outputs along W per invocation (1 or 2).  poolgpu.kernels sets 2 on GPUs: per
// output, less index arithmetic, and the loads that neighbouring windows share are made
// once; 16-bit outputs sharing a word are stored at once, where one output per invocation
// needs two word atomics per element.

override OUTPUTS: u32 = 1u;

// Windows are walked with their taps written out, up to UNROLLED taps along each dimension
// (guarded by the window's override constants, which fold away); longer ones loop.  naga
// bounds every WGSL loop with an iteration counter, so that it provably ends, and that
// counter keeps drivers from unrolling it: each tap's load then waits for the previous
// tap's compare.  On an H100, case A max: 1.1x faster written out, 1.37x with OUTPUTS 2
// (case B: 1.08x, 1.73x).
const UNROLLED = 4u;

// Tap kw of a window row (d, h: the row's coordinates; w0: the window's first column).
fn tap_at(acc: Acc, x_plane: u32, logical_plane: u32, d: Coord, h: Coord, w0: i32, kw: u32) -> Acc {
    let w = coord(w0, kw, LW, params.in_w);
    let raw = x_load(x_plane + d.at * params.x_d + h.at * params.x_h + w.at * params.x_w);
    let index = logical_plane + (d.at * params.in_h + h.at) * params.in_w + w.at;
    return acc_add(acc, tap_of(raw), index, d.inside && h.inside && w.inside);
}

// Row kh of a window plane: its taps in increasing kw.
fn row_at(acc: Acc, x_plane: u32, logical_plane: u32, d: Coord, h0: i32, kh: u32, w0: i32) -> Acc {
    let h = coord(h0, kh, LH, params.in_h);
    var a = acc;
    if (KW > UNROLLED) {
        for (var kw = 0u; kw < KW; kw++) { a = tap_at(a, x_plane, logical_plane, d, h, w0, kw); }
        return a;
    }
    a = tap_at(a, x_plane, logical_plane, d, h, w0, 0u);
    if (KW > 1u) { a = tap_at(a, x_plane, logical_plane, d, h, w0, 1u); }
    if (KW > 2u) { a = tap_at(a, x_plane, logical_plane, d, h, w0, 2u); }
    if (KW > 3u) { a = tap_at(a, x_plane, logical_plane, d, h, w0, 3u); }
    return a;
}

// Plane kd of a window: its rows in increasing kh.
fn plane_at(acc: Acc, x_plane: u32, logical_plane: u32, d0: i32, kd: u32, h0: i32, w0: i32) -> Acc {
    let d = coord(d0, kd, LD, params.in_d);
    var a = acc;
    if (KH > UNROLLED) {
        for (var kh = 0u; kh < KH; kh++) { a = row_at(a, x_plane, logical_plane, d, h0, kh, w0); }
        return a;
    }
    a = row_at(a, x_plane, logical_plane, d, h0, 0u, w0);
    if (KH > 1u) { a = row_at(a, x_plane, logical_plane, d, h0, 1u, w0); }
    if (KH > 2u) { a = row_at(a, x_plane, logical_plane, d, h0, 2u, w0); }
    if (KH > 3u) { a = row_at(a, x_plane, logical_plane, d, h0, 3u, w0); }
    return a;
}

// The accumulator of output `at`'s window (x_plane: its input plane's first element), its
// taps in increasing flat index.
fn window_of(at: Out, x_plane: u32, logical_plane: u32) -> Acc {
    let d0 = i32(at.d * SD) - i32(PD);
    let h0 = i32(at.h * SH) - i32(PH);
    let w0 = i32(at.w * SW) - i32(PW);
    var a = acc_new();
    if (KD > UNROLLED) {
        for (var kd = 0u; kd < KD; kd++) { a = plane_at(a, x_plane, logical_plane, d0, kd, h0, w0); }
        return a;
    }
    a = plane_at(a, x_plane, logical_plane, d0, 0u, h0, w0);
    if (KD > 1u) { a = plane_at(a, x_plane, logical_plane, d0, 1u, h0, w0); }
    if (KD > 2u) { a = plane_at(a, x_plane, logical_plane, d0, 2u, h0, w0); }
    if (KD > 3u) { a = plane_at(a, x_plane, logical_plane, d0, 3u, h0, w0); }
    return a;
}

fn store_one(at: Out, acc: Acc) {
    y_store(y_offset(at), acc_value(acc, at));
    idx_store_index(idx_offset(at), acc_index(acc));
}

// Outputs `at` and the next along W.
fn store_two(at: Out, acc: Acc, next: Out, acc_next: Acc) {
    let y = y_offset(at);
    if (params.y_w == 1u && (y & 1u) == 0u) {   // one word for two 16-bit outputs
        y_store_pair(y, acc_value(acc, at), acc_value(acc_next, next));
    } else {
        y_store(y, acc_value(acc, at));
        y_store(y + params.y_w, acc_value(acc_next, next));
    }
    let idx = idx_offset(at);
    idx_store_index(idx, acc_index(acc));
    idx_store_index(idx + params.idx_w, acc_index(acc_next));
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let pos = grid_position(wg, lid);   // (ow / OUTPUTS, oh, (n, c, od))
    if (pos.x >= params.columns) { return; }
    let od = pos.z % params.out_d;
    let nc = pos.z / params.out_d;
    let at = Out(nc / params.channels, nc % params.channels, od, pos.y, OUTPUTS * pos.x);
    let x_plane = params.x_base + at.n * params.x_n + at.c * params.x_c;
    let logical_plane = nc * params.in_d * params.in_h * params.in_w;
    let next = Out(at.n, at.c, od, at.h, at.w + 1u);
    if (OUTPUTS == 1u || next.w >= params.out_w) {   // (a row's last output)
        store_one(at, window_of(at, x_plane, logical_plane));
        return;
    }
    store_two(at, window_of(at, x_plane, logical_plane), next, window_of(next, x_plane, logical_plane));
}

// The general window walk (see window_geometry.wgsl): tensors of any strides, OUTPUTS
// neighbouring outputs along W per invocation (1 or 2).  poolgpu.kernels sets 2 on GPUs: per
// output, less index arithmetic, and the loads that neighbouring windows share are made
// once; 16-bit outputs sharing a word are stored at once, where one output per invocation
// needs two word atomics per element.  Its functions; each entry point, one per kind of
// invocation, is a file of its own: window_walk_one.wgsl, window_walk_two.wgsl and
// window_walk_pairs.wgsl (poolgpu.kernels.window picks it).

override OUTPUTS: u32 = 1u;

// Windows are walked with their taps written out, up to UNROLLED taps along each dimension
// (guarded by the window's override constants, which fold away); longer ones loop.  naga
// bounds every WGSL loop with an iteration counter, so that it provably ends, and that
// counter keeps drivers from unrolling it: each tap's load then waits for the previous
// tap's compare.  On an H100, case A max: 1.1x faster written out, 1.37x with OUTPUTS 2
// (case B: 1.08x, 1.73x).
const UNROLLED = 4u;

// A dimension that loops visits only the window's taps inside the input (taps_inside:
// padding is never data, so the result is the same), so that its loop is as long as the
// input allows, however far the window reaches into padding.
//
// Split windows (poolgpu.kernels.window: windows with more taps than one invocation may walk;
// llvmpipe ends an invocation's loops after 65535 iterations in all): the looping dimensions'
// taps are cut into PARTS_D x PARTS_H x PARTS_W parts (PARTS of them, numbered along W
// fastest), one invocation walks one part of one output's window and saves its accumulator
// (acc_save, into tensor `part`: ACC_WORDS words for each of the output's PARTS parts) for
// the merge pass (window_walk_merge.wgsl).  Parts are only cut along looping dimensions.
// An accumulator whose result depends on the order of its taps (a float32 sum in the window's
// order: common/quantized_accumulator.wgsl's) is CHAINED instead: one pass per part, part
// params.chain_part of every window, each continuing from the accumulator the pass before
// saved (one per output in `part`) and the last storing the outputs.
override PARTS_D: u32 = 1u;
override PARTS_H: u32 = 1u;
override PARTS_W: u32 = 1u;
override PARTS: u32 = 1u;   // their product (computed by poolgpu.kernels)
override CHAINED: bool = false;

// Where acc_save (common/*_partials.wgsl) puts a part's words.
fn save_word(e: u32, v: u32) { part_word_store(e, v); }
fn load_word(e: u32) -> u32 { return part_word(e); }

// The coordinate of tap k, known to be inside the input.
fn inside_at(start: i32, k: u32, dilation: u32) -> Coord {
    return Coord(u32(start + i32(k * dilation)), true);
}

// The tap at (d, h, w) of a window.
fn tap_at(acc: Acc, x_plane: u32, logical_plane: u32, d: Coord, h: Coord, w: Coord) -> Acc {
    let raw = x_load(x_plane + d.at * params.x_d + h.at * params.x_h + w.at * params.x_w);
    let index = logical_plane + (d.at * params.in_h + h.at) * params.in_w + w.at;
    return acc_add(acc, tap_of(raw), index, d.inside && h.inside && w.inside);
}

// A window row's taps in increasing kw (ws: the looping taps, where KW > UNROLLED).
fn row_at(acc: Acc, x_plane: u32, logical_plane: u32, d: Coord, h: Coord, w0: i32, ws: Taps) -> Acc {
    var a = acc;
    if (KW > UNROLLED) {
        for (var kw = ws.first; kw < ws.end; kw++) { a = tap_at(a, x_plane, logical_plane, d, h, inside_at(w0, kw, LW)); }
        return a;
    }
    a = tap_at(a, x_plane, logical_plane, d, h, coord(w0, 0u, LW, params.in_w));
    if (KW > 1u) { a = tap_at(a, x_plane, logical_plane, d, h, coord(w0, 1u, LW, params.in_w)); }
    if (KW > 2u) { a = tap_at(a, x_plane, logical_plane, d, h, coord(w0, 2u, LW, params.in_w)); }
    if (KW > 3u) { a = tap_at(a, x_plane, logical_plane, d, h, coord(w0, 3u, LW, params.in_w)); }
    return a;
}

// A window plane's rows in increasing kh.
fn plane_at(acc: Acc, x_plane: u32, logical_plane: u32, d: Coord, h0: i32, hs: Taps, w0: i32, ws: Taps) -> Acc {
    var a = acc;
    if (KH > UNROLLED) {
        for (var kh = hs.first; kh < hs.end; kh++) {
            a = row_at(a, x_plane, logical_plane, d, inside_at(h0, kh, LH), w0, ws);
        }
        return a;
    }
    a = row_at(a, x_plane, logical_plane, d, coord(h0, 0u, LH, params.in_h), w0, ws);
    if (KH > 1u) { a = row_at(a, x_plane, logical_plane, d, coord(h0, 1u, LH, params.in_h), w0, ws); }
    if (KH > 2u) { a = row_at(a, x_plane, logical_plane, d, coord(h0, 2u, LH, params.in_h), w0, ws); }
    if (KH > 3u) { a = row_at(a, x_plane, logical_plane, d, coord(h0, 3u, LH, params.in_h), w0, ws); }
    return a;
}

// The accumulator `acc` of output `at`'s window with the taps of its part `part` added
// (x_plane: its input plane's first element), in increasing flat index.
fn window_from(acc: Acc, at: Out, part: u32, x_plane: u32, logical_plane: u32) -> Acc {
    let d0 = i32(at.d * SD) - i32(PD);
    let h0 = i32(at.h * SH) - i32(PH);
    let w0 = i32(at.w * SW) - i32(PW);
    let ws = taps_part(taps_inside(w0, KW, LW, params.in_w), part % PARTS_W, PARTS_W);
    let hs = taps_part(taps_inside(h0, KH, LH, params.in_h), (part / PARTS_W) % PARTS_H, PARTS_H);
    var a = acc;
    if (KD > UNROLLED) {
        let ds = taps_part(taps_inside(d0, KD, LD, params.in_d), part / (PARTS_W * PARTS_H), PARTS_D);
        for (var kd = ds.first; kd < ds.end; kd++) {
            a = plane_at(a, x_plane, logical_plane, inside_at(d0, kd, LD), h0, hs, w0, ws);
        }
        return a;
    }
    a = plane_at(a, x_plane, logical_plane, coord(d0, 0u, LD, params.in_d), h0, hs, w0, ws);
    if (KD > 1u) { a = plane_at(a, x_plane, logical_plane, coord(d0, 1u, LD, params.in_d), h0, hs, w0, ws); }
    if (KD > 2u) { a = plane_at(a, x_plane, logical_plane, coord(d0, 2u, LD, params.in_d), h0, hs, w0, ws); }
    if (KD > 3u) { a = plane_at(a, x_plane, logical_plane, coord(d0, 3u, LD, params.in_d), h0, hs, w0, ws); }
    return a;
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

// Where an invocation of the walk is: its first output and the part of its window, as the
// general walk's grid numbers them (main's pos).
struct Walked { at: Out, next: Out, part: u32, output: u32, x_plane: u32, logical_plane: u32 }

fn walked(pos: vec3<u32>) -> Walked {   // (ow / OUTPUTS, oh, ((n, c, od), part)); CHAINED: (ow, oh, (n, c, od))
    let part = select(pos.z % PARTS, params.chain_part, CHAINED);
    let plane = select(pos.z / PARTS, pos.z, CHAINED);   // (n, c, od)
    let od = plane % params.out_d;
    let nc = plane / params.out_d;
    let at = Out(nc / params.channels, nc % params.channels, od, pos.y, OUTPUTS * pos.x);
    return Walked(at, Out(at.n, at.c, od, at.h, at.w + 1u), part, (plane * params.out_h + at.h) * params.out_w + at.w,
                  params.x_base + at.n * params.x_n + at.c * params.x_c, nc * params.in_d * params.in_h * params.in_w);
}

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

// The accumulator of part `part` of output `at`'s window (acc_for: the operator's accumulator
// of that window, before its first tap).
fn window_of(at: Out, part: u32, x_plane: u32, logical_plane: u32) -> Acc {
    return window_from(acc_for(at), at, part, x_plane, logical_plane);
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

// -- Pairs from shared words (WORD_PAIRS: Tuning.paired_words) ----------------------------------
// 16-bit inputs hold two elements per 32-bit word, and a tap through x_load loads a whole
// word to keep half of it.  WORD_PAIRS (OUTPUTS 2, windows written out along W, x contiguous
// along W): each window row of an invocation's two outputs is loaded once, as the words
// holding both windows' taps (x_words: every read snippet's words), and both outputs take
// their taps from them.  Every row of x starts at an even element (x_base and x's other
// strides even: poolgpu.kernels runs the plain walk otherwise) and the first output of a
// pair is even, so the pair's windows start at an element of parity PW & 1 of their first
// word: where each tap sits in the words is known when the pipeline is built.  Each
// accumulator is fed its own taps in the plain walk's order: the same bits.
override WORD_PAIRS: bool = false;
const PAIR_WORDS = 5u;   // the most words a pair's row spans (poolgpu.kernels.window.PAIR_SPAN)

struct Pair { a: Acc, b: Acc }

// The tap `q` elements past the first word of `words` (as Raw: zero-extended 16 bits).
fn pair_tap(acc: Acc, words: array<u32, PAIR_WORDS>, q: u32, logical_row: u32, w: Coord, row_inside: bool) -> Acc {
    let raw = raw_of_words(vec2<u32>((words[q >> 1u] >> ((q & 1u) << 4u)) & 0xffffu, 0u));
    return acc_add(acc, tap_of(raw), logical_row + w.at, row_inside && w.inside);
}

// Word `at` of x, kept inside the row's words [lo, hi] where windows reach into padding.
fn pair_word(at: i32, lo: i32, hi: i32) -> u32 { return x_words[u32(select(at, clamp(at, lo, hi), PADDED))]; }

// One output's taps of a window row starting `start` elements into it (`q0` into its words).
fn pair_taps(acc: Acc, words: array<u32, PAIR_WORDS>, q0: u32, start: i32, logical_row: u32, row_inside: bool) -> Acc {
    var a = pair_tap(acc, words, q0, logical_row, coord(start, 0u, LW, params.in_w), row_inside);
    if (KW > 1u) { a = pair_tap(a, words, q0 + LW, logical_row, coord(start, 1u, LW, params.in_w), row_inside); }
    if (KW > 2u) { a = pair_tap(a, words, q0 + 2u * LW, logical_row, coord(start, 2u, LW, params.in_w), row_inside); }
    if (KW > 3u) { a = pair_tap(a, words, q0 + 3u * LW, logical_row, coord(start, 3u, LW, params.in_w), row_inside); }
    return a;
}

// A window row of both outputs (the first's window starting at w0, the second's SW later):
// its words loaded once (clamped to the row's where windows reach into padding, whose taps
// are ignored), then each output's taps.
fn pair_row(p: Pair, x_plane: u32, logical_plane: u32, d: Coord, h: Coord, w0: i32) -> Pair {
    let lead = PW & 1u;
    let count = (lead + SW + (KW - 1u) * LW + 2u) / 2u;   // the words of the pair's span
    let row = x_plane + d.at * params.x_d + h.at * params.x_h;   // (even)
    let first = (i32(row) + w0 - i32(lead)) / 2;
    let lo = i32(row / 2u);
    let hi = i32((row + params.in_w - 1u) / 2u);
    var words: array<u32, PAIR_WORDS>;
    words[0] = pair_word(first, lo, hi);
    if (count > 1u) { words[1] = pair_word(first + 1, lo, hi); }
    if (count > 2u) { words[2] = pair_word(first + 2, lo, hi); }
    if (count > 3u) { words[3] = pair_word(first + 3, lo, hi); }
    if (count > 4u) { words[4] = pair_word(first + 4, lo, hi); }
    let logical_row = logical_plane + (d.at * params.in_h + h.at) * params.in_w;
    let inside = d.inside && h.inside;
    return Pair(pair_taps(p.a, words, lead, w0, logical_row, inside),
                pair_taps(p.b, words, lead + SW, w0 + i32(SW), logical_row, inside));
}

// A window plane's rows of both outputs, in increasing kh (plane_at's).
fn pair_plane(p: Pair, x_plane: u32, logical_plane: u32, d: Coord, h0: i32, hs: Taps, w0: i32) -> Pair {
    var q = p;
    if (KH > UNROLLED) {
        for (var kh = hs.first; kh < hs.end; kh++) { q = pair_row(q, x_plane, logical_plane, d, inside_at(h0, kh, LH), w0); }
        return q;
    }
    q = pair_row(q, x_plane, logical_plane, d, coord(h0, 0u, LH, params.in_h), w0);
    if (KH > 1u) { q = pair_row(q, x_plane, logical_plane, d, coord(h0, 1u, LH, params.in_h), w0); }
    if (KH > 2u) { q = pair_row(q, x_plane, logical_plane, d, coord(h0, 2u, LH, params.in_h), w0); }
    if (KH > 3u) { q = pair_row(q, x_plane, logical_plane, d, coord(h0, 3u, LH, params.in_h), w0); }
    return q;
}

// The accumulators of the windows of outputs `at` and the next along W (window_of's).
fn pair_windows(at: Out, next: Out, x_plane: u32, logical_plane: u32) -> Pair {
    let d0 = i32(at.d * SD) - i32(PD);
    let h0 = i32(at.h * SH) - i32(PH);
    let w0 = i32(at.w * SW) - i32(PW);
    let hs = taps_inside(h0, KH, LH, params.in_h);
    var q = Pair(acc_for(at), acc_for(next));
    if (KD > UNROLLED) {
        let ds = taps_inside(d0, KD, LD, params.in_d);
        for (var kd = ds.first; kd < ds.end; kd++) { q = pair_plane(q, x_plane, logical_plane, inside_at(d0, kd, LD), h0, hs, w0); }
        return q;
    }
    q = pair_plane(q, x_plane, logical_plane, coord(d0, 0u, LD, params.in_d), h0, hs, w0);
    if (KD > 1u) { q = pair_plane(q, x_plane, logical_plane, coord(d0, 1u, LD, params.in_d), h0, hs, w0); }
    if (KD > 2u) { q = pair_plane(q, x_plane, logical_plane, coord(d0, 2u, LD, params.in_d), h0, hs, w0); }
    if (KD > 3u) { q = pair_plane(q, x_plane, logical_plane, coord(d0, 3u, LD, params.in_d), h0, hs, w0); }
    return q;
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let pos = grid_position(wg, lid);   // (ow / OUTPUTS, oh, ((n, c, od), part)); CHAINED: (ow, oh, (n, c, od))
    if (pos.x >= params.columns) { return; }
    let part = select(pos.z % PARTS, params.chain_part, CHAINED);
    let plane = select(pos.z / PARTS, pos.z, CHAINED);   // (n, c, od)
    let od = plane % params.out_d;
    let nc = plane / params.out_d;
    let at = Out(nc / params.channels, nc % params.channels, od, pos.y, OUTPUTS * pos.x);
    let x_plane = params.x_base + at.n * params.x_n + at.c * params.x_c;
    let logical_plane = nc * params.in_d * params.in_h * params.in_w;
    let output = (plane * params.out_h + at.h) * params.out_w + at.w;
    if (CHAINED) {
        let saved = params.part_base + output * ACC_WORDS;
        var acc = acc_for(at);
        if (part > 0u) { acc = acc_load(saved); }
        acc = window_from(acc, at, part, x_plane, logical_plane);
        if (part + 1u < PARTS) {
            acc_save(saved, acc);
        } else {
            store_one(at, acc);
        }
        return;
    }
    if (PARTS > 1u) {
        acc_save(params.part_base + (output * PARTS + part) * ACC_WORDS, window_of(at, part, x_plane, logical_plane));
        return;
    }
    let next = Out(at.n, at.c, od, at.h, at.w + 1u);
    if (OUTPUTS == 1u || next.w >= params.out_w) {   // (a row's last output)
        store_one(at, window_of(at, 0u, x_plane, logical_plane));
        return;
    }
    if (WORD_PAIRS) {
        let pair = pair_windows(at, next, x_plane, logical_plane);
        store_two(at, pair.a, next, pair.b);
        return;
    }
    store_two(at, window_of(at, 0u, x_plane, logical_plane), next, window_of(next, 0u, x_plane, logical_plane));
}

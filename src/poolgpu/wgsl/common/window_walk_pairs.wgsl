// The general walk's entry point for two outputs per invocation (OUTPUTS 2) of 16-bit inputs
// whose pairs of outputs share their words (common/window_walk.wgsl; Tuning.paired_words,
// poolgpu.kernels.window.pairs_fit).
//
// 16-bit inputs hold two elements per 32-bit word, and a tap through x_load loads a whole
// word to keep half of it.  Here (OUTPUTS 2, windows written out along W, x contiguous along
// W) each window row of an invocation's two outputs is loaded once, as the words holding both
// windows' taps (x_words: every read snippet's words), and both outputs take their taps from
// them.  Every row of x starts at an even element (x_base and x's other strides even:
// poolgpu.kernels runs the plain walk otherwise) and the first output of a pair is even, so
// the pair's windows start at an element of parity PW & 1 of their first word: where each
// tap sits in the words is known when the pipeline is built.  Each accumulator is fed its
// own taps in the plain walk's order: the same bits.
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

// The accumulators of the windows of outputs `at` and the next along W (window_from's, from
// acc_for: the operator's accumulator of a window before its first tap).
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

// Two outputs per invocation (OUTPUTS 2, whole windows), a row's last one alone.
@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let pos = grid_position(wg, lid);
    if (pos.x >= params.columns) { return; }
    let w = walked(pos);
    if (w.next.w >= params.out_w) {
        store_one(w.at, window_from(acc_for(w.at), w.at, 0u, w.x_plane, w.logical_plane));
        return;
    }
    let pair = pair_windows(w.at, w.next, w.x_plane, w.logical_plane);
    store_two(w.at, pair.a, w.next, pair.b);
}

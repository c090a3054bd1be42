// ROI align's gradient by 8 x 8 blocks of a dx plane (roi_align_grad.wgsl, one block an
// invocation; roi_align_grad_shared.wgsl, one block a workgroup of channels): the weights
// of an output's samples on the block's rows or columns, the outputs meeting the block, and
// an element's sum carried or written.  Needs roi_align_table.wgsl and the tensors dx
// (dx_store) and acc (acc_word, acc_word_store).

override NEAREST: bool = false;
override FIRST: bool = true;   // the first run of ROIs: the sums start at zero (else from acc)
override LAST: bool = true;    // the last: dx written (else the sums saved into acc)

const BLOCK: u32 = 8u;

// The weights of the 8 elements from e0 along an axis (lo: e0 to e0 + 3, hi: e0 + 4 to e0 + 7).
struct Weights { lo: vec4<f32>, hi: vec4<f32> }

fn no_weights() -> Weights { return Weights(vec4<f32>(0.0), vec4<f32>(0.0)); }

fn weight_of(w: Weights, k: u32) -> f32 { return select(w.hi[k & 3u], w.lo[k & 3u], k < 4u); }

// The weight `v` at element e alone.
fn one_weight(e: u32, e0: u32, v: f32) -> Weights {
    let at = vec4<u32>(e0) + vec4<u32>(0u, 1u, 2u, 3u);
    let zero = vec4<f32>(0.0);
    return Weights(select(zero, vec4<f32>(v), at == vec4<u32>(e)), select(zero, vec4<f32>(v), at + 4u == vec4<u32>(e)));
}

// The weights of a sample read as `l` (bilinear, or 1 at the nearest element).
fn sample_weights(l: Lerp, e0: u32) -> Weights {
    if (NEAREST) { return one_weight(nearest_of(l), e0, 1.0); }
    let low = one_weight(l.low, e0, 1.0 - l.frac);
    let high = one_weight(l.high, e0, l.frac);
    return Weights(low.lo + high.lo, low.hi + high.hi);
}

// The first sample of the run [run.x, run.y) of output o at or above `bound` (`rising`), or
// below it: a binary search (samples move monotonically with i).
fn first_beyond(ax: Axis, o: u32, out: u32, run: vec2<u32>, bound: f32, rising: bool) -> u32 {
    var low = run.x;
    var high = run.y;
    for (var probe = 0u; probe < 32u; probe++) {
        if (low >= high) { break; }
        let middle = low + (high - low) / 2u;
        let v = sample_at(ax, o, middle, out);
        if (select((v < bound), (v >= bound), rising)) { high = middle; } else { low = middle + 1u; }
    }
    return low;
}

// The summed weights of output o's samples [run.x, run.y) along an axis, for the block's
// elements from e0.  Where NEAR (an output's samples may be more than those near a block),
// only the samples at [e0 - 1, e0 + BLOCK + 1), the only ones whose elements may lie in the
// block, found by two binary searches.
fn run_weights(ax: Axis, o: u32, out: u32, size: u32, run: vec2<u32>, e0: u32, near: bool) -> Weights {
    var samples = run;
    if (near && run.y > run.x) {
        let lowest = f32(e0) - 1.0;
        let highest = f32(e0 + BLOCK + 1u);
        let rising = sample_at(ax, o, run.y - 1u, out) >= sample_at(ax, o, run.x, out);
        samples = vec2<u32>(first_beyond(ax, o, out, run, select(highest, lowest, rising), rising),
                            first_beyond(ax, o, out, run, select(lowest, highest, rising), rising));
    }
    var w = no_weights();
    for (var i = samples.x; i < samples.y; i++) {
        let s = sample_weights(lerp_of(sample_at(ax, o, i, out), size), e0);
        w = Weights(w.lo + s.lo, w.hi + s.hi);
    }
    return w;
}

// Whether entry e's elements [lo, hi) meet [e0, e1).
fn meets(e: vec4<u32>, e0: u32, e1: u32) -> bool { return e.z < e1 && e.w > e0 && e.w > e.z; }

// The outputs [first, end) along an axis whose elements meet [e0, e1) (they are consecutive:
// samples move monotonically with the output; the loops test each again).
fn meeting(row: u32, axis: u32, out: u32, e0: u32, e1: u32) -> vec2<u32> {
    var first = out;
    var end = 0u;
    for (var m = 0u; m < out; m++) {
        if (meets(roi_entry(row, axis, m), e0, e1)) {
            first = min(first, m);
            end = m + 1u;
        }
    }
    return vec2<u32>(first, max(first, end));
}

// The block's sums carried from the runs of ROIs before this one (zero where FIRST): row j
// at [2 j] (columns 0 to 3) and [2 j + 1], written out.  Each element's sum continues one
// chain of additions, so the runs' boundaries between ROIs leave its bits as they are.
fn carried_block(plane: u32, y0: u32, x0: u32, y1: u32, x1: u32) -> array<vec4<f32>, 16> {
    var b: array<vec4<f32>, 16>;
    if (FIRST) { return b; }
    b[0] = carried_four(plane, y0, x0, y1, x1);
    b[1] = carried_four(plane, y0, x0 + 4u, y1, x1);
    b[2] = carried_four(plane, y0 + 1u, x0, y1, x1);
    b[3] = carried_four(plane, y0 + 1u, x0 + 4u, y1, x1);
    b[4] = carried_four(plane, y0 + 2u, x0, y1, x1);
    b[5] = carried_four(plane, y0 + 2u, x0 + 4u, y1, x1);
    b[6] = carried_four(plane, y0 + 3u, x0, y1, x1);
    b[7] = carried_four(plane, y0 + 3u, x0 + 4u, y1, x1);
    b[8] = carried_four(plane, y0 + 4u, x0, y1, x1);
    b[9] = carried_four(plane, y0 + 4u, x0 + 4u, y1, x1);
    b[10] = carried_four(plane, y0 + 5u, x0, y1, x1);
    b[11] = carried_four(plane, y0 + 5u, x0 + 4u, y1, x1);
    b[12] = carried_four(plane, y0 + 6u, x0, y1, x1);
    b[13] = carried_four(plane, y0 + 6u, x0 + 4u, y1, x1);
    b[14] = carried_four(plane, y0 + 7u, x0, y1, x1);
    b[15] = carried_four(plane, y0 + 7u, x0 + 4u, y1, x1);
    return b;
}

fn carried_four(plane: u32, y: u32, x: u32, y1: u32, x1: u32) -> vec4<f32> {
    if (y >= y1) { return vec4<f32>(0.0); }
    return vec4<f32>(carried_one(plane, y, x, x1), carried_one(plane, y, x + 1u, x1),
                     carried_one(plane, y, x + 2u, x1), carried_one(plane, y, x + 3u, x1));
}

fn carried_one(plane: u32, y: u32, x: u32, x1: u32) -> f32 {
    if (x >= x1) { return 0.0; }
    return bitcast<f32>(acc_word(carried_at(plane, y, x)));
}

fn carried_at(plane: u32, y: u32, x: u32) -> u32 {
    return params.acc_base + plane * params.in_h * params.in_w + y * params.in_w + x;
}

// Element (y, x) of dx plane `plane` (image n, channel c): its sum written to dx where LAST,
// else saved into acc for the next run.
fn finish_element(n: u32, c: u32, plane: u32, y: u32, x: u32, sum: f32) {
    if (LAST) {
        dx_store(params.dx_base + n * params.dx_n + c * params.dx_c + y * params.dx_h + x * params.dx_w, from_f32(sum));
    } else {
        acc_word_store(carried_at(plane, y, x), bitcast<u32>(sum));
    }
}

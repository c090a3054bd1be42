// ROI align's gradient by 8 x 8 blocks of a dx plane (roi_align_grad.wgsl, one block an
// invocation; roi_align_grad_shared.wgsl, one block a workgroup of channels): the weights
// of an output's samples on the block's rows or columns, the outputs meeting the block, and
// their sums carried or written by common/carried_blocks.wgsl.  Needs roi_align_table.wgsl.

override NEAREST: bool = false;

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

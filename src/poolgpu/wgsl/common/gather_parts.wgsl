// The flat gathers' parts (the adaptive and fractional gradients): one invocation per dx
// element, or in a split gather (poolgpu.kernels: more bins cover an element than one
// invocation may visit) per part of what covers it: PARTS_D x PARTS_H x PARTS_W parts (PARTS
// of them; invocations numbered element * PARTS + part), each saved into tensor `part` for
// the merge pass (window_walk_merge.wgsl over gradient_sum.wgsl).
override PARTS_D: u32 = 1u;
override PARTS_H: u32 = 1u;
override PARTS_W: u32 = 1u;
override PARTS: u32 = 1u;   // their product (computed by poolgpu.kernels)

// Part `part` of `parts` of a run [first, end) of bins.
fn part_of(bins: vec2<u32>, part: u32, parts: u32) -> vec2<u32> {
    let t = taps_part(Taps(bins.x, bins.y), part, parts);
    return vec2<u32>(t.first, t.end);
}

// Invocation t's sum: its dx element's (stored at dx offset e), or part t % PARTS of it.
fn gather_store(t: u32, e: u32, sum: f32) {
    if (PARTS > 1u) {
        part_word_store(params.part_base + t, bitcast<u32>(sum));
        return;
    }
    dx_store(e, from_f32(sum));
}

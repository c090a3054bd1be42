// The adaptive gradients' gathers (adaptive_max_pool_grad.wgsl,
// adaptive_average_pool_grad.wgsl): one invocation per dx element, numbered flat over
// {N, C, in_d, in_h, in_w} (common/flat_index.wgsl, from params.origin: a chunk's first,
// kernels.chunked), and the ranges of output coordinates whose bins cover it
// (common/adaptive_range.wgsl).  Reads the Params fields channels, in_d, in_h, in_w and
// out_d, out_h, out_w.
//
// Split gathers (poolgpu.kernels.binned: more bins cover an element than one invocation may
// visit): the covering bins are cut into PARTS_D x PARTS_H x PARTS_W parts (PARTS of them;
// invocations numbered element * PARTS + part), one invocation sums one part and saves it
// into tensor `part` for the merge pass (window_walk_merge.wgsl over gradient_sum.wgsl).
override PARTS_D: u32 = 1u;
override PARTS_H: u32 = 1u;
override PARTS_W: u32 = 1u;
override PARTS: u32 = 1u;   // their product (computed by poolgpu.kernels)
struct Covered {
    e: u32,                                  // the dx element's flat logical index
    n: u32, c: u32, d: u32, h: u32, w: u32,
    od: vec2<u32>, oh: vec2<u32>, ow: vec2<u32>,   // [first, end) of the covering bins per dimension
}

fn covered(t: u32) -> Covered {
    var at: Covered;
    let e = t / PARTS;
    let part = t % PARTS;
    at.e = e;
    let rows = e / params.in_w;          // (n, c, d, h)
    at.w = e - rows * params.in_w;
    let planes = rows / params.in_h;     // (n, c, d)
    at.h = rows - planes * params.in_h;
    let nc = planes / params.in_d;
    at.d = planes - nc * params.in_d;
    at.n = nc / params.channels;
    at.c = nc - at.n * params.channels;
    at.od = part_of(adaptive_range(at.d, params.out_d, params.in_d), part / (PARTS_W * PARTS_H), PARTS_D);
    at.oh = part_of(adaptive_range(at.h, params.out_h, params.in_h), (part / PARTS_W) % PARTS_H, PARTS_H);
    at.ow = part_of(adaptive_range(at.w, params.out_w, params.in_w), part % PARTS_W, PARTS_W);
    return at;
}

fn part_of(bins: vec2<u32>, part: u32, parts: u32) -> vec2<u32> {
    let t = taps_part(Taps(bins.x, bins.y), part, parts);
    return vec2<u32>(t.first, t.end);
}

// Invocation t's sum: dx element at.e's (stored at dx offset e), or part t % PARTS of it.
fn gather_store(t: u32, e: u32, sum: f32) {
    if (PARTS > 1u) {
        part_word_store(params.part_base + t, bitcast<u32>(sum));
        return;
    }
    dx_store(e, from_f32(sum));
}

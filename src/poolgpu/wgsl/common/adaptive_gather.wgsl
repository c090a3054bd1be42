// The adaptive gradients' gathers (adaptive_max_pool_grad.wgsl,
// adaptive_average_pool_grad.wgsl): one invocation per dx element, numbered flat over
// {N, C, in_d, in_h, in_w} (common/flat_index.wgsl, from params.origin: a chunk's first,
// kernels.chunked), and the ranges of output coordinates whose bins cover it
// (common/adaptive_range.wgsl).  Reads the Params fields channels, in_d, in_h, in_w and
// out_d, out_h, out_w.
struct Covered {
    e: u32,                                  // the dx element's flat logical index
    n: u32, c: u32, d: u32, h: u32, w: u32,
    od: vec2<u32>, oh: vec2<u32>, ow: vec2<u32>,   // [first, end) of the covering bins per dimension
}

fn covered(e: u32) -> Covered {
    var at: Covered;
    at.e = e;
    let rows = e / params.in_w;          // (n, c, d, h)
    at.w = e - rows * params.in_w;
    let planes = rows / params.in_h;     // (n, c, d)
    at.h = rows - planes * params.in_h;
    let nc = planes / params.in_d;
    at.d = planes - nc * params.in_d;
    at.n = nc / params.channels;
    at.c = nc - at.n * params.channels;
    at.od = adaptive_range(at.d, params.out_d, params.in_d);
    at.oh = adaptive_range(at.h, params.out_h, params.in_h);
    at.ow = adaptive_range(at.w, params.out_w, params.in_w);
    return at;
}

// The binned gradients' gathers (adaptive_max_pool_grad.wgsl, adaptive_average_pool_grad.wgsl,
// and the fractional max gradient): one invocation per dx element, numbered flat over
// {N, C, in_d, in_h, in_w} (common/flat_index.wgsl, from params.origin: a chunk's first,
// kernels.chunked), and along each dimension the run of output coordinates whose bins cover
// it: covering(nc, axis, i), from common/adaptive_covering.wgsl or fractional_covering.wgsl.
// Reads the Params fields channels, in_d, in_h, in_w.  Split gathers: common/gather_parts.wgsl.
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
    at.od = part_of(covering(nc, 0u, at.d), part / (PARTS_W * PARTS_H), PARTS_D);
    at.oh = part_of(covering(nc, 1u, at.h), (part / PARTS_W) % PARTS_H, PARTS_H);
    at.ow = part_of(covering(nc, 2u, at.w), part % PARTS_W, PARTS_W);
    return at;
}

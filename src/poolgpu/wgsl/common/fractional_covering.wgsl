// The fractional windows covering input i along dimension `axis` (0: D, 1: H, 2: W) of plane
// nc: a search of the plane's row of the bin table (common/bin_search.wgsl).  At most
// COVER_D, COVER_H, COVER_W windows cover one input (poolgpu.kernels bounds them from alpha
// and the samples' rounding; the loops' declarations rest on it).  Reads the Params fields
// bins_base and out_d, out_h, out_w (dy's).
override COVER_D: u32 = 1u;
override COVER_H: u32 = 1u;
override COVER_W: u32 = 1u;

fn covering(nc: u32, axis: u32, i: u32) -> vec2<u32> {
    let counts = vec3<u32>(params.out_d, params.out_h, params.out_w);
    let row = params.bins_base + nc * bin_row_words(counts);
    let before = vec3<u32>(0u, counts.x, counts.x + counts.y);   // pairs before the dimension's
    let run = covering_run(row + 1u + 2u * before[axis], counts[axis], i);
    let most = vec3<u32>(COVER_D, COVER_H, COVER_W);
    return vec2<u32>(run.x, min(run.y, run.x + most[axis]));
}

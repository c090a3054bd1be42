// The four indices of an invocation's run of a row (common/unpool_source.wgsl) in one
// 4-element chunk (poolgpu.kernels checks: indices contiguous along W, or along C where
// ALONG_C, the other steps and the tensor's start at multiples of 4 elements).  Reading
// indices in chunks made case A's winners pass about 1.5x faster on lavapipe.
fn run_indices(r: UnpoolRow) -> array<vec2<u32>, 4> {
    return idx_load4_index(params.idx_base + r.n * params.idx_n + r.c * params.idx_c + r.d * params.idx_d
                           + r.h * params.idx_h + r.w0 * params.idx_w);
}

// The four indices of an invocation's run of a row (common/unpool_source.wgsl), one load
// each: any index strides.
fn run_indices(r: UnpoolRow) -> array<vec2<u32>, 4> {
    let row = params.idx_base + r.n * params.idx_n + r.c * params.idx_c + r.d * params.idx_d + r.h * params.idx_h;
    var indices: array<vec2<u32>, 4>;
    for (var k = 0u; k < 4u; k++) {
        // vec2 of a u32 repeats it, of a (low, high) pair keeps it (the high word counts
        // only for UINT64 indices)
        if (r.w0 + k < params.in_w) { indices[k] = vec2<u32>(idx_load(row + (r.w0 + k) * params.idx_w)); }
    }
    return indices;
}

// The four indices of an invocation's run of a row (common/unpool_source.wgsl), one load
// each: any index strides.

// The index of element w of the row (zero past its end).  vec2 of a u32 repeats it, of a
// (low, high) pair keeps it (the high word counts only for UINT64 indices).
fn index_at(row: u32, w: u32) -> vec2<u32> {
    if (w >= params.in_w) { return vec2<u32>(0u); }
    return vec2<u32>(idx_load(row + w * params.idx_w));
}

fn run_indices(r: UnpoolRow) -> array<vec2<u32>, 4> {
    let row = params.idx_base + r.n * params.idx_n + r.c * params.idx_c + r.d * params.idx_d + r.h * params.idx_h;
    return array<vec2<u32>, 4>(index_at(row, r.w0), index_at(row, r.w0 + 1u), index_at(row, r.w0 + 2u),
                               index_at(row, r.w0 + 3u));
}

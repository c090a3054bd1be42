// The indices of a candidate input element of max_unpool_gather.wgsl's run, one load each
// (any index strides): the element's, and along C those of the run's next RUN - 1 channels.
// vec2 of a u32 repeats it, of a (low, high) pair keeps it.
fn candidate_indices(e: u32) -> array<vec2<u32>, 4> {
    var v: array<vec2<u32>, 4>;
    v[0] = vec2<u32>(idx_load(e));
    if (ALONG_C && RUN > 1u) {
        v[1] = vec2<u32>(idx_load(e + params.idx_c));
        v[2] = vec2<u32>(idx_load(e + 2u * params.idx_c));
        v[3] = vec2<u32>(idx_load(e + 3u * params.idx_c));
    }
    return v;
}

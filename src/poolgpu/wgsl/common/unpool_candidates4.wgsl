// The indices of a candidate input element of max_unpool_gather.wgsl's run along C, in one
// 4-element chunk (poolgpu.kernels checks: indices contiguous along C, their other steps and
// start at multiples of 4 elements, the run's channels a multiple of 4).
fn candidate_indices(e: u32) -> array<vec2<u32>, 4> { return idx_load4_index(e); }

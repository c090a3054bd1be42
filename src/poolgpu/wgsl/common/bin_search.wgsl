// Searches of a bin table row (common/bin_table.wgsl), whose starts and ends never decrease
// along a dimension: the bins covering coordinate i (start <= i < end) are a run.

// The run [first, end) of the `count` bins whose (start, end) pairs lie from word `at` that
// cover i: first = the first bin ending after i, end = the first bin starting after it.
fn covering_run(at: u32, count: u32, i: u32) -> vec2<u32> {
    return vec2<u32>(first_above(at + 1u, count, i), first_above(at, count, i));
}

// The first of `count` bins whose word at `at + 2 * bin` is above i (count where none is): a
// binary search, at most bit_length(count) probes (poolgpu.kernels declares that).
fn first_above(at: u32, count: u32, i: u32) -> u32 {
    var low = 0u;
    var high = count;
    for (var probe = 0u; probe < 32u; probe++) {
        if (low >= high) { break; }
        let middle = low + (high - low) / 2u;
        if (bins_load(at + 2u * middle) > i) { high = middle; } else { low = middle + 1u; }
    }
    return low;
}

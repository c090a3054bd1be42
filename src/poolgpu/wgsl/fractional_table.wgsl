// Fractional max pooling's window table for the fractional walks (fractional_max_pool.wgsl,
// fractional_max_pool_grad.wgsl): per (n, c) plane, a row of `row_words` u32 words:
//
//     [starts along D | starts along H | starts along W]            (the walks)
//     [firsts along D | ends along D | firsts ... H | ... W]         (the gradient: COVERS)
//
// each list padded to a multiple of 4 words (a walk reads four starts along W with one
// 16-byte load).  Window i's start is PyTorch's (common/fractional_window.wgsl, as
// fractional_bins.wgsl computes it); past the last window a list repeats the last start.
// For input coordinate i, first and end bound the run of windows covering it (start <= i <
// start + k): first = the first window whose start passes i - k, end = the first whose start
// passes i (binary searches over the starts, computed again: they never decrease); past the
// input both are the window count.
//
// One invocation per plane and entry: an entry is one start, or one input coordinate's
// first and end.
//
// Prepended by poolgpu.kernels: the samples' value type (to_f32, from_f32) and the tensors
// samples (samples_load) and bins (bins_store); library: fractional_window.wgsl,
// flat_index.wgsl.

override COVERS: bool = false;   // the covering runs too (the gradient's)

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

fn padded(v: u32) -> u32 { return (v + 3u) & ~3u; }

// The first of the windows of a dimension whose start passes `i` (the count where none does):
// a binary search, at most bit_length(out) probes (poolgpu.kernels declares that).
fn first_past(i: i32, u: Raw, size_in: u32, k: u32, out: u32, alpha: u32) -> u32 {
    var low = 0u;
    var high = out;
    for (var probe = 0u; probe < 32u; probe++) {
        if (low >= high) { break; }
        let middle = low + (high - low) / 2u;
        if (i32(window_start(middle, u, size_in, k, out, alpha)) > i) { high = middle; } else { low = middle + 1u; }
    }
    return low;
}

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let index = flat_index(wg, groups, lane, WG_X, params.total);
    if (index >= params.total) { return; }
    let plane = index / params.entries;
    var t = index - plane * params.entries;
    let row = params.bins_base + plane * params.row_words;
    // the entry's list: D, H, W starts, then (COVERS) D, H, W coordinates
    let starts = padded(params.out_d) + padded(params.out_h) + padded(params.out_w);
    let covering = t >= starts;
    if (covering) { t -= starts; }
    var axis = 0u;
    var lists = vec3<u32>(padded(params.out_d), padded(params.out_h), padded(params.out_w));
    if (covering) { lists = vec3<u32>(padded(params.in_d), padded(params.in_h), padded(params.in_w)); }
    if (t >= lists.x) {
        t -= lists.x;
        axis = 1u;
        if (t >= lists.y) {
            t -= lists.y;
            axis = 2u;
        }
    }
    let size_in = vec3<u32>(params.in_d, params.in_h, params.in_w)[axis];
    let k = vec3<u32>(params.k_d, params.k_h, params.k_w)[axis];
    let out = vec3<u32>(params.out_d, params.out_h, params.out_w)[axis];
    let alpha = vec3<u32>(params.alpha_d, params.alpha_h, params.alpha_w)[axis];
    let sample = vec3<u32>(params.sample_d, params.sample_h, params.sample_w)[axis];
    let n = plane / params.channels;
    let u = samples_load(params.samples_base + n * params.samples_n + (plane - n * params.channels) * params.samples_c
                         + sample * params.samples_k);
    if (!covering) {
        let before = vec3<u32>(0u, lists.x, lists.x + lists.y)[axis];
        bins_store(row + before + t, window_start(min(t, out - 1u), u, size_in, k, out, alpha));
        return;
    }
    if (!COVERS) { return; }
    // (firsts, then ends, of each dimension in turn)
    let at = row + starts + 2u * vec3<u32>(0u, lists.x, lists.x + lists.y)[axis] + t;
    var first = out;
    var end = out;
    if (t < size_in) {
        first = first_past(i32(t) - i32(k), u, size_in, k, out, alpha);
        end = first_past(i32(t), u, size_in, k, out, alpha);
    }
    bins_store(at, first);
    bins_store(at + lists[axis], end);
}

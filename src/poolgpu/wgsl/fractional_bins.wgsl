// Fractional max pooling, pass 1: each (n, c) plane's windows (PyTorch's, from the plane's
// samples), into the bin table (layout: common/bin_table.wgsl; PLANE_ROWS: one row per plane).
//
// Along a dimension of `in` inputs pooled by windows of `k` into `out` outputs, with u the
// plane's sample for it and alpha = (in - k) / (out - 1):
//     window i < out - 1 starts at int((i + u) * alpha) - int(u * alpha), the last at in - k,
// computed as PyTorch's CPU kernel computes it in the samples' type: float32 arithmetic,
// and for float16 and bfloat16 every step rounded to the type (rounded(), through the value
// snippet's from_f32, round to nearest even).  alpha arrives computed (Params alpha_*: its
// f32 bits, worked out by poolgpu.kernels in the same arithmetic).  Additions and products
// of f32 are correctly rounded in WGSL; the conversion of i is done exactly (f32_of,
// common/exact_f32.wgsl).  Any sample value is taken, as PyTorch takes it: int() is C's
// 32-bit conversion as x86-64 does it (truncated()) and the difference wraps as C's int does
// there.  A start is clamped to [0, in - k], so no window leaves the input whatever the
// samples (PyTorch stops with an internal assertion where one would).
//
// One invocation per plane and entry t of its row: t = 0 writes the source batch (n), the
// others one window's (start, start + k) along D, then H, then W.
//
// Prepended by poolgpu.kernels: the samples' value type (to_f32, from_f32) and the tensors
// samples (samples_load) and bins (bins_store); library: fractional_window.wgsl (window_start),
// flat_index.wgsl, exact_f32.wgsl (f32_of).

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let index = flat_index(wg, groups, lane, WG_X, params.total);
    if (index >= params.total) { return; }
    let entries = 1u + params.out_d + params.out_h + params.out_w;
    let plane = index / entries;
    let t = index % entries;
    let row = params.bins_base + plane * (1u + 2u * (entries - 1u));
    if (t == 0u) {
        bins_store(row, plane / params.channels);
        return;
    }
    // the entry's dimension: its sizes, alpha and sample
    var i = t - 1u;
    var size_in = params.in_d;  var k = params.k_d;  var out = params.out_d;
    var alpha = params.alpha_d;  var sample = params.sample_d;
    if (i >= params.out_d + params.out_h) {
        i -= params.out_d + params.out_h;
        size_in = params.in_w;  k = params.k_w;  out = params.out_w;  alpha = params.alpha_w;  sample = params.sample_w;
    } else if (i >= params.out_d) {
        i -= params.out_d;
        size_in = params.in_h;  k = params.k_h;  out = params.out_h;  alpha = params.alpha_h;  sample = params.sample_h;
    }
    let n = plane / params.channels;
    let u = samples_load(params.samples_base + n * params.samples_n + (plane - n * params.channels) * params.samples_c
                         + sample * params.samples_k);
    let start = window_start(i, u, size_in, k, out, alpha);
    bins_store(row + 1u + 2u * (t - 1u), start);
    bins_store(row + 2u + 2u * (t - 1u), start + k);
}

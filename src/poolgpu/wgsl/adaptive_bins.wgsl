// Adaptive pooling's bins (PyTorch's): along each spatial dimension, output o pools input
// [floor(o * in / out), ceil((o + 1) * in / out)) (common/adaptive_range.wgsl).  One
// invocation per bin writes its (start, end) pair into the single row of the bin table
// (layout: common/bin_table.wgsl).
//
// Prepended by poolgpu.kernels: the tensor bins (bins_store); library: wide_int.wgsl,
// adaptive_range.wgsl, flat_index.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let t = flat_index(wg, groups, lane, WG_X, params.total);
    if (t >= params.total) { return; }
    // Bins are numbered along D, then H, then W, as in the table row.
    var o = t;
    var size_in = params.in_d;
    var size_out = params.out_d;
    if (t >= params.out_d + params.out_h) {
        o = t - params.out_d - params.out_h;
        size_in = params.in_w;
        size_out = params.out_w;
    } else if (t >= params.out_d) {
        o = t - params.out_d;
        size_in = params.in_h;
        size_out = params.out_h;
    }
    let range = adaptive_range(o, size_in, size_out);
    let at = params.bins_base + 1u + 2u * t;
    bins_store(at, range.x);
    bins_store(at + 1u, range.y);
}

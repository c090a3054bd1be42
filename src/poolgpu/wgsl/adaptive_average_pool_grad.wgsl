// Adaptive average pooling gradient: a gather.  Each dx element sums, in increasing
// (od, oh, ow) order, dy / count of the bins covering it (count: the bin's element count,
// PyTorch's bins of common/adaptive_range.wgsl).  No atomics and a fixed order: the same
// inputs give bit-identical dx, run after run.  Each share is dy divided by the count and
// rounded as average_pool_grad.wgsl's (kept as written: common/as_written.wgsl); sums are
// f32, FLOAT16 rounded once at the end.
//
// Every tensor is seen as 5-D {N, C, D, H, W}.
// Prepended by poolgpu.kernels: the value type (to_f32, from_f32) and the tensors dy (dy_load)
// and dx (dx_store); library: wide_int.wgsl, adaptive_range.wgsl, adaptive_covering.wgsl,
// taps.wgsl, gather_parts.wgsl, bins_gather.wgsl, flat_index.wgsl, as_written.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

// The element count of bin o along a dimension of `size_in` inputs and `size_out` bins.
fn bin_count(o: u32, size_in: u32, size_out: u32) -> u32 {
    let bin = adaptive_range(o, size_in, size_out);
    return bin.y - bin.x;
}

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let local = flat_index(wg, groups, lane, WG_X, params.total);
    if (local >= params.total) { return; }
    let t = params.origin + local;
    let at = covered(t);
    let dy_plane = params.dy_base + at.n * params.dy_n + at.c * params.dy_c;
    var sum = 0.0;
    for (var od = at.od.x; od < at.od.y; od++) {
        let count_d = bin_count(od, params.in_d, params.out_d);
        for (var oh = at.oh.x; oh < at.oh.y; oh++) {
            let count_dh = count_d * bin_count(oh, params.in_h, params.out_h);
            for (var ow = at.ow.x; ow < at.ow.y; ow++) {
                let count = count_dh * bin_count(ow, params.in_w, params.out_w);
                let dy = to_f32(dy_load(dy_plane + od * params.dy_d + oh * params.dy_h + ow * params.dy_w));
                sum += as_written(dy / divisor_as_written(count));
            }
        }
    }
    gather_store(t, params.dx_base + at.n * params.dx_n + at.c * params.dx_c + at.d * params.dx_d + at.h * params.dx_h
                 + at.w * params.dx_w, sum);
}

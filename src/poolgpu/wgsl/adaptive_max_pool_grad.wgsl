// Adaptive and fractional max pooling gradients: a gather, after the bins walk
// (common/window_walk_bins.wgsl) has written each bin's argmax (max pooling's rule: NaN above
// everything, ties to the lowest flat index) into the scratch `arg`.  Each dx element sums, in
// increasing (od, oh, ow) order, the dy of the bins covering it whose argmax it is: no atomics
// and a fixed order, so the same inputs give bit-identical dx, run after run.  The sum is f32
// (FLOAT16 and BFLOAT16 rounded once at the end).
//
// Every tensor is seen as 5-D {N, C, D, H, W}.
// Prepended by poolgpu.kernels: the value type (to_f32, from_f32) and the tensors dy (dy_load),
// arg (arg_load, u32 flat indices) and dx (dx_store); library: covering() (adaptive: wide_int.wgsl,
// adaptive_range.wgsl, adaptive_covering.wgsl; fractional: the bins tensor, bin_table.wgsl,
// bin_search.wgsl, fractional_covering.wgsl), taps.wgsl, gather_parts.wgsl, bins_gather.wgsl,
// flat_index.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let local = flat_index(wg, groups, lane, WG_X, params.total);
    if (local >= params.total) { return; }
    let t = params.origin + local;
    let at = covered(t);
    let dy_plane = params.dy_base + at.n * params.dy_n + at.c * params.dy_c;
    let arg_plane = params.arg_base + at.n * params.arg_n + at.c * params.arg_c;
    var sum = 0.0;
    for (var od = at.od.x; od < at.od.y; od++) {
        for (var oh = at.oh.x; oh < at.oh.y; oh++) {
            for (var ow = at.ow.x; ow < at.ow.y; ow++) {
                if (arg_load(arg_plane + od * params.arg_d + oh * params.arg_h + ow * params.arg_w) == at.e) {
                    sum += to_f32(dy_load(dy_plane + od * params.dy_d + oh * params.dy_h + ow * params.dy_w));
                }
            }
        }
    }
    gather_store(t, params.dx_base + at.n * params.dx_n + at.c * params.dx_c + at.d * params.dx_d + at.h * params.dx_h
                 + at.w * params.dx_w, sum);
}

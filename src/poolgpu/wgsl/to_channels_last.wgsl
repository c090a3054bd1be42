// A copy of x {N, C, H, W} (any strides) into the packed channels-last scratch y {N, H, W, C}
// (C a multiple of 4), for kernels that read four neighbouring channels with one 16-byte
// load (roi_align_channels_last.wgsl).  Four channels per invocation, numbered flat over
// {N, H, W, C / 4} with the runs of channels fastest: an invocation's four values are one
// 16-byte store, and neighbouring lanes store neighbouring runs.
//
// Prepended by poolgpu.kernels: the value type (Raw) and the tensors x (x_load) and y
// (y_store4); library: divide.wgsl, flat_index.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let t = flat_index(wg, groups, lane, WG_X, params.total);
    if (t >= params.total) { return; }
    let spot = divide(t, params.runs, params.runs_magic, params.runs_shift);        // (n, h, w)
    let run = t - spot * params.runs;
    let rows = divide(spot, params.in_w, params.in_w_magic, params.in_w_shift);     // (n, h)
    let n = divide(rows, params.in_h, params.in_h_magic, params.in_h_shift);
    let at = params.x_base + n * params.x_n + 4u * run * params.x_c + (rows - n * params.in_h) * params.x_h
             + (spot - rows * params.in_w) * params.x_w;
    y_store4(params.y_base + 4u * t, array<Raw, 4>(x_load(at), x_load(at + params.x_c), x_load(at + 2u * params.x_c),
                                                   x_load(at + 3u * params.x_c)));
}

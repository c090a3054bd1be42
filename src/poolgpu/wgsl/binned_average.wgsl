// Average over variable bins (adaptive average pooling).  Each output's bin comes from the
// bin table a bins pass wrote (common/bin_table.wgsl).  One invocation per output.
//
// Accumulated as average pooling accumulates a window (avg_pool.wgsl): a compensated f32 sum
// in increasing flat index order, divided once by the element count and converted with
// from_f32 (correctly rounded for FLOAT16).  So where bins are uniform the result is average
// pooling's, bit for bit; infinities and NaN propagate as in plain arithmetic.
//
// Every tensor is seen as 5-D {N, C, D, H, W}.
// Prepended by poolgpu.kernels: the value type (to_f32, from_f32) and the tensors x (x_load),
// bins (bins_load) and y (y_store); library: bin_table.wgsl (bin_of), compensated_sum.wgsl,
// flat_index.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let local = flat_index(wg, groups, lane, WG_X, params.total);
    if (local >= params.total) { return; }
    let out = binned_output(params.origin + local);
    let bin = out.bin;  let n = out.n;  let c = out.c;
    let od = out.o.x;  let oh = out.o.y;  let ow = out.o.z;

    let x_plane = params.x_base + bin.batch * params.x_n + c * params.x_c;
    var sum = CompensatedSum(0.0, 0.0);
    for (var d = bin.start.x; d < bin.end.x; d++) {
        for (var h = bin.start.y; h < bin.end.y; h++) {
            for (var w = bin.start.z; w < bin.end.z; w++) {
                sum = compensated_add(sum, to_f32(x_load(x_plane + d * params.x_d + h * params.x_h + w * params.x_w)));
            }
        }
    }
    let count = (bin.end.x - bin.start.x) * (bin.end.y - bin.start.y) * (bin.end.z - bin.start.z);
    y_store(params.y_base + n * params.y_n + c * params.y_c + od * params.y_d + oh * params.y_h + ow * params.y_w,
            from_f32(compensated_total(sum) / f32(count)));
}

// Max over variable bins: ROI pooling (pass 2) and adaptive max pooling.  Each output's bin
// comes from the bin table a bins pass wrote (common/bin_table.wgsl); bins are clamped to
// the input, so nothing outside it is read.  One invocation per output; elements are visited
// in increasing flat index and a strict `>` keeps the first maximum (max pooling's rules:
// NaN above everything, ties to the lowest index).  An empty bin (ROI pooling only) gives 0.
//
// Every tensor is seen as 5-D {N, C, D, H, W}.
// Prepended by poolgpu.kernels: the value type (Raw, Key, key_of, key_gt) and the tensors
// x (x_load), bins (bins_load), y (y_store) and idx (idx_store_index; a no-op when no indices
// were asked for); library: bin_table.wgsl (bin_of, the ROI constant), flat_index.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let local = flat_index(wg, groups, lane, WG_X, params.total);
    if (local >= params.total) { return; }
    let out = binned_output(params.origin + local);
    let bin = out.bin;  let n = out.n;  let c = out.c;
    let od = out.o.x;  let oh = out.o.y;  let ow = out.o.z;
    if (ROI && bin.batch * params.channels + c - params.source_first >= params.source_count) { return; }

    let x_plane = params.x_base + bin.batch * params.x_n + c * params.x_c;
    let logical_plane = (bin.batch * params.channels + c) * params.in_d * params.in_h * params.in_w;
    var best_key: Key;
    var best_raw: Raw;      // zero: the value of an empty bin
    var best_index = 0u;
    var found = false;
    for (var d = bin.start.x; d < bin.end.x; d++) {
        for (var h = bin.start.y; h < bin.end.y; h++) {
            for (var w = bin.start.z; w < bin.end.z; w++) {
                let raw = x_load(x_plane + d * params.x_d + h * params.x_h + w * params.x_w);
                let key = key_of(raw);
                let take = !found || key_gt(key, best_key);
                best_key = select(best_key, key, take);
                best_raw = select(best_raw, raw, take);
                best_index = select(best_index, logical_plane + (d * params.in_h + h) * params.in_w + w, take);
                found = true;
            }
        }
    }
    y_store(params.y_base + n * params.y_n + c * params.y_c + od * params.y_d + oh * params.y_h + ow * params.y_w, best_raw);
    idx_store_index(params.idx_base + n * params.idx_n + c * params.idx_c + od * params.idx_d + oh * params.idx_h + ow * params.idx_w, best_index);
}

// ROI align over a packed channels-last input x {N, H, W, C} (C a multiple of 4; the input
// itself, or its copy by to_channels_last.wgsl): the average or the maximum of its samples
// (bilinear, or NEAREST: the nearest element; WEIGHTED: the maximum of each sample's weighted
// corners), four neighbouring channels per invocation, numbered flat over
// {R, out_h, out_w, C / 4} with the runs of channels fastest.  Each element a sample reads is
// one 16-byte load of four channels, their weights shared, and neighbouring lanes read
// neighbouring 16 bytes; roi_align.wgsl reads each channel's elements one at a time, planes
// apart.  The samples, their order, weights, sums and comparisons are roi_align.wgsl's, so
// the bits are the same (it writes no argmax: the gradients walk the input themselves).
//
// Prepended by poolgpu.kernels: the value type and the tensors x (x_load4), table (table_word)
// and y (y_store); library: roi_align_table.wgsl, roi_align_reduce.wgsl, divide.wgsl,
// flat_index.wgsl, as_written.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

override NEAREST: bool = false;    // the nearest element instead of bilinear interpolation
override WEIGHTED: bool = false;   // the maximum of each sample's weighted corners (ONNX Runtime's)

fn corner(at: u32) -> vec4<f32> {
    let v = x_load4(at);
    return vec4<f32>(to_f32(v[0]), to_f32(v[1]), to_f32(v[2]), to_f32(v[3]));
}

// The four channels' values of a sample (roi_align_sample.wgsl's sample_value, per channel).
fn sample4(image: u32, ly: Lerp, lx: Lerp) -> vec4<f32> {
    if (NEAREST) { return corner(image + nearest_of(ly) * params.x_h + nearest_of(lx) * params.x_w); }
    let v1 = corner(image + ly.low * params.x_h + lx.low * params.x_w);
    let v2 = corner(image + ly.low * params.x_h + lx.high * params.x_w);
    let v3 = corner(image + ly.high * params.x_h + lx.low * params.x_w);
    let v4 = corner(image + ly.high * params.x_h + lx.high * params.x_w);
    let w = corner_weights(ly, lx);
    if (REDUCE_MAX && WEIGHTED) {   // max(max(max(a, b), c), d): ties keep the first (and a NaN first)
        var best = w.x * v1;   // (compared through as_written: roi_align_sample.wgsl says why)
        best = select(best, w.y * v2, best < as_written4(w.y * v2));
        best = select(best, w.z * v3, best < as_written4(w.z * v3));
        return select(best, w.w * v4, best < as_written4(w.w * v4));
    }
    return as_written4(as_written4(as_written4(w.x * v1) + as_written4(w.y * v2)) + as_written4(w.z * v3))
           + as_written4(w.w * v4);
}

fn store(value: f32, k: u32, r: u32, c: u32, oh: u32, ow: u32, valid: bool, ay: Axis, ax: Axis, ey: vec4<u32>,
         ex: vec4<u32>) {
    let result = reduced_output(Reduced(value, true, 0u, 0u, 4u), valid, ay.n, ax.n, ey.y - ey.x, ex.y - ex.x,
                                bitcast<f32>(params.oob));
    y_store(params.y_base + r * params.y_n + (c + k) * params.y_c + oh * params.y_h + ow * params.y_w,
            from_f32(result.value));
}

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let t = flat_index(wg, groups, lane, WG_X, params.total);
    if (t >= params.total) { return; }
    // (r, oh, ow) and the run of channels (Params' channels: C / 4)
    let spot = divide(t, params.channels, params.channels_magic, params.channels_shift);
    let c = 4u * (t - spot * params.channels);
    let rows = divide(spot, params.out_w, params.out_w_magic, params.out_w_shift);         // (r, oh)
    let r = divide(rows, params.out_h, params.out_h_magic, params.out_h_shift);
    let oh = rows - r * params.out_h;
    let ow = spot - rows * params.out_w;
    let row = params.table_base + r * roi_row_words();
    let batch = table_word(row);
    let valid = batch < params.in_n;
    let ay = roi_axis(row, 0u);
    let ax = roi_axis(row, 1u);
    let ey = roi_entry(row, 0u, oh);
    let ex = roi_entry(row, 1u, ow);
    var acc = vec4<f32>(0.0);   // (roi_align_reduce.wgsl's reduced_add, per channel)
    var have = false;
    if (valid) {
        let image = params.x_base + batch * params.x_n + c;
        for (var iy = ey.x; iy < ey.y; iy++) {
            let ly = lerp_of(sample_at(ay, oh, iy, params.out_h), params.in_h);
            for (var ix = ex.x; ix < ex.y; ix++) {
                let lx = lerp_of(sample_at(ax, ow, ix, params.out_w), params.in_w);
                let s = sample4(image, ly, lx);
                if (REDUCE_MAX) {
                    acc = select(acc, s, vec4<bool>(!have) | (acc < s));
                } else {
                    acc = as_written4(acc + s);
                }
                have = true;
            }
        }
    }
    store(acc.x, 0u, r, c, oh, ow, valid, ay, ax, ey, ex);
    store(acc.y, 1u, r, c, oh, ow, valid, ay, ax, ey, ex);
    store(acc.z, 2u, r, c, oh, ow, valid, ay, ax, ey, ex);
    store(acc.w, 3u, r, c, oh, ow, valid, ay, ax, ey, ex);
}

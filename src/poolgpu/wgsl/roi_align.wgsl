// ROI align, pass 2: each output's samples (common/roi_align_sample.wgsl) over its bin of
// the region table (common/roi_align_table.wgsl).  One invocation per output (or per
// CHANNELS outputs of neighbouring channels, below), numbered flat over {R, C, out_h, out_w}
// (common/flat_index.wgsl, from params.origin; common/roi_outputs.wgsl), or where an
// output's samples are more than one invocation may visit, per part of them: PARTS_Y x
// PARTS_X runs of its inside samples (invocations numbered output * PARTS + part), each
// saved into scratch `part` for roi_align_merge.wgsl.  Samples in (iy, ix) order, as ONNX
// Runtime and torchvision visit them; sums in f32 (FLOAT16 and BFLOAT16 rounded once).
// The maximum's argmax sample goes to `arg` (three words per output: iy, ix, corner) where
// a gradient asks for it.
//
// An output reads the input plane (batch * C + c): for inputs larger than a binding
// (chunked) a dispatch computes only outputs reading planes in [source_first,
// source_first + source_count).
//
// Prepended by poolgpu.kernels: the value type and the tensors x (x_load), table
// (table_word), y (y_store), part (part_word_store) and arg (arg_word_store); library:
// roi_align_table.wgsl, roi_align_reduce.wgsl, roi_align_sample.wgsl, taps.wgsl, flat_index.wgsl, as_written.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

override PARTS_Y: u32 = 1u;
override PARTS_X: u32 = 1u;
override PARTS: u32 = 1u;   // their product
// Outputs per invocation along C, 1 or 4 (with PARTS 1, C a multiple of 4, whole tensors):
// four channels' outputs at the same bin share its samples' positions and weights.  The
// invocations are numbered over {R, C / CHANNELS, out_h, out_w}: Params' channels is C /
// CHANNELS.
override CHANNELS: u32 = 1u;

fn reduced_save(e: u32, acc: Reduced) {
    part_word_store(e, bitcast<u32>(acc.value));
    part_word_store(e + 1u, select(0u, 1u, acc.have));
    part_word_store(e + 2u, acc.iy);
    part_word_store(e + 3u, acc.ix);
    part_word_store(e + 4u, acc.corner);
}

// Output k of the invocation's channels: its result, its value and argmax stored.
fn finish(acc: Reduced, k: u32, r: u32, c: u32, oh: u32, ow: u32, valid: bool, ay: Axis, ax: Axis, ey: vec4<u32>,
          ex: vec4<u32>) {
    let result = reduced_output(acc, valid, ay.n, ax.n, ey.y - ey.x, ex.y - ex.x, bitcast<f32>(params.oob));
    y_store(params.y_base + r * params.y_n + (c + k) * params.y_c + oh * params.y_h + ow * params.y_w,
            from_f32(result.value));
    let output = ((r * params.channels * CHANNELS + c + k) * params.out_h + oh) * params.out_w + ow;
    let at = params.arg_base + output * 3u;
    arg_word_store(at, result.iy);
    arg_word_store(at + 1u, result.ix);
    arg_word_store(at + 2u, result.corner);
}

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let local = flat_index(wg, groups, lane, WG_X, params.total);
    if (local >= params.total) { return; }
    let t = params.origin + local;
    let output = t / PARTS;
    let part = t % PARTS;
    let o = roi_output(output);   // (CHANNELS > 1: over {R, C / CHANNELS, out_h, out_w})
    let r = o.r;
    let c = o.c * CHANNELS;
    let oh = o.oh;
    let ow = o.ow;
    let row = params.table_base + r * roi_row_words();
    let batch = table_word(row);
    let valid = batch < params.in_n;
    if (valid && batch * params.channels * CHANNELS + c - params.source_first >= params.source_count) { return; }
    if (!valid && params.source_first != 0u) { return; }   // (written once, by the first chunk)

    let ay = roi_axis(row, 0u);
    let ax = roi_axis(row, 1u);
    let ey = roi_entry(row, 0u, oh);
    let ex = roi_entry(row, 1u, ow);
    var acc = reduced_new();
    var acc1 = reduced_new();
    var acc2 = reduced_new();
    var acc3 = reduced_new();
    if (valid) {
        let plane = params.x_base + batch * params.x_n + c * params.x_c;
        let ys = taps_part(Taps(ey.x, ey.y), part / PARTS_X, PARTS_Y);
        let xs = taps_part(Taps(ex.x, ex.y), part % PARTS_X, PARTS_X);
        for (var iy = ys.first; iy < ys.end; iy++) {
            let ly = lerp_of(sample_at(ay, oh, iy, params.out_h), params.in_h);
            for (var ix = xs.first; ix < xs.end; ix++) {
                let lx = lerp_of(sample_at(ax, ow, ix, params.out_w), params.in_w);
                acc = reduced_add(acc, sample_value(plane, ly, lx), iy, ix);
                if (CHANNELS == 4u) {   // (the same sample of the next channels: its position and weights shared)
                    acc1 = reduced_add(acc1, sample_value(plane + params.x_c, ly, lx), iy, ix);
                    acc2 = reduced_add(acc2, sample_value(plane + 2u * params.x_c, ly, lx), iy, ix);
                    acc3 = reduced_add(acc3, sample_value(plane + 3u * params.x_c, ly, lx), iy, ix);
                }
            }
        }
    }
    if (PARTS > 1u) {
        reduced_save(params.part_base + t * PART_WORDS, acc);
        return;
    }
    finish(acc, 0u, r, c, oh, ow, valid, ay, ax, ey, ex);
    if (CHANNELS == 4u) {
        finish(acc1, 1u, r, c, oh, ow, valid, ay, ax, ey, ex);
        finish(acc2, 2u, r, c, oh, ow, valid, ay, ax, ey, ex);
        finish(acc3, 3u, r, c, oh, ow, valid, ay, ax, ey, ex);
    }
}

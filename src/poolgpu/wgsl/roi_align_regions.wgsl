// ROI align, pass 1: each ROI's row of the region table (common/roi_align_table.wgsl).
//
// For a ROI [x1, y1, x2, y2] and an axis with corners c1, c2, scale s, input size `in` and
// `out` outputs (f32 throughout, as ONNX Runtime and torchvision compute):
//     start = c1 * s - input_offset,  size = (c2 * s - input_offset) - start
//     size = max(size, MIN_REGION) where a minimum region size is set
//     bin = size / out,  samples n = ceil(bin) clamped to [min_samples, max_samples]
//           (ceil(bin) <= 0 or NaN: 0 before clamping)
// Each output coordinate's run [a, b) of samples inside [-1, in] is found by binary search
// (samples move monotonically with i), and the rows (columns) [lo, hi) those read.
//
// One invocation per ROI r and entry t: t = 0 writes the batch word and both axes' (n,
// start, bin), t in [1, 1 + out_h) a row's entry, the rest a column's.
//
// Prepended by poolgpu.kernels: the value type (to_f32) and the tensors roi (roi_load, the
// input's type), batch (batch_words: ROI_BATCH_TYPES as two words) and table
// (table_word_store, table_word); library: roi_align_table.wgsl, flat_index.wgsl, as_written.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

override BATCH_SIGNED32: bool = false;   // INT32 batch indices: a set sign bit is negative
override HAS_MIN_REGION: bool = false;

// ROI r's batch, or params.in_n where it lies outside [0, in_n).
fn batch_of(r: u32) -> u32 {
    let w = batch_words(params.batch_base + r * params.batch_r);
    let negative = w.y != 0u || (BATCH_SIGNED32 && w.x >= 0x80000000u);
    return select(min(w.x, params.in_n), params.in_n, negative);
}

fn corner(r: u32, k: u32) -> f32 { return to_f32(roi_load(params.roi_base + r * params.roi_r + k * params.roi_k)); }

// Axis 0 (Y: corners 1 and 3, scale_y) or 1 (X: corners 0 and 2, scale_x) of ROI r.
fn axis_of(r: u32, axis: u32, out: u32) -> Axis {
    let scale = bitcast<f32>(select(params.scale_y, params.scale_x, axis == 1u));
    let offset = bitcast<f32>(params.in_offset);
    let start = as_written(as_written(corner(r, 1u - axis) * scale) - offset);
    let end = as_written(as_written(corner(r, 3u - axis) * scale) - offset);
    var size = as_written(end - start);
    let least = bitcast<f32>(params.min_region);
    if (HAS_MIN_REGION && size < least) { size = least; }
    let bin = as_written(size / f32(out));
    let c = ceil(bin);
    var n = 0u;
    if (c >= 4294967295.0) { n = 4294967295u; } else if (c >= 1.0) { n = u32(c); }
    n = clamp(n, params.min_samples, params.max_samples);
    return Axis(n, start, select(bin, size, ALIGN_CORNERS));
}

// The first i in [0, n) whose sample v satisfies v >= bound (`above`, not `strict`),
// v > bound (`above`, `strict`), v <= bound or v < bound, or n: a binary search, for a
// condition the monotone samples meet from some i on.
fn first_where(ax: Axis, o: u32, out: u32, bound: f32, above: bool, strict: bool) -> u32 {
    var low = 0u;
    var high = ax.n;
    for (var probe = 0u; probe < 32u; probe++) {
        if (low >= high) { break; }
        let middle = low + (high - low) / 2u;
        let v = sample_at(ax, o, middle, out);
        let met = select(select(v <= bound, v < bound, strict), select(v >= bound, v > bound, strict), above);
        if (met) { high = middle; } else { low = middle + 1u; }
    }
    return low;
}

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let index = flat_index(wg, groups, lane, WG_X, params.total);
    if (index >= params.total) { return; }
    let entries = 1u + params.out_h + params.out_w;
    let r = index / entries;
    let t = index % entries;
    let row = params.table_base + r * roi_row_words();
    if (t == 0u) {
        table_word_store(row, batch_of(r));
        for (var axis = 0u; axis < 2u; axis++) {
            let ax = axis_of(r, axis, select(params.out_h, params.out_w, axis == 1u));
            table_word_store(row + 1u + 3u * axis, ax.n);
            table_word_store(row + 2u + 3u * axis, bitcast<u32>(ax.start));
            table_word_store(row + 3u + 3u * axis, bitcast<u32>(ax.bin));
        }
        return;
    }
    let axis = select(0u, 1u, t > params.out_h);
    let o = select(t - 1u, t - 1u - params.out_h, axis == 1u);
    let out = select(params.out_h, params.out_w, axis == 1u);
    let size = select(params.in_h, params.in_w, axis == 1u);
    let ax = axis_of(r, axis, out);
    // Samples rise with i where the bin is positive, else fall; NaN: none inside.
    var a = 0u;
    var b = 0u;
    if (ax.bin == ax.bin && ax.start == ax.start && ax.n > 0u) {
        let rising = sample_at(ax, o, ax.n - 1u, out) >= sample_at(ax, o, 0u, out);
        if (rising) {   // inside: from the first at or above -1 to the first above size
            a = first_where(ax, o, out, -1.0, true, false);
            b = first_where(ax, o, out, f32(size), true, true);
        } else {        // from the first at or below size to the first below -1
            a = first_where(ax, o, out, f32(size), false, false);
            b = first_where(ax, o, out, -1.0, false, true);
        }
    }
    var span = vec2<u32>(0u, 0u);
    if (b > a) {
        let first = lerp_of(sample_at(ax, o, a, out), size);
        let last = lerp_of(sample_at(ax, o, b - 1u, out), size);
        span = vec2<u32>(min(first.low, last.low), max(first.high, last.high) + 1u);
    } else {
        b = a;
    }
    let at = row + ROW_HEADER + 4u * (o + axis * params.out_h);
    table_word_store(at, a);
    table_word_store(at + 1u, b);
    table_word_store(at + 2u, span.x);
    table_word_store(at + 3u, span.y);
}

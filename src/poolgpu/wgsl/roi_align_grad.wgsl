// ROI align's input gradient: a gather.  One invocation per dx element (n, c, y, x), numbered
// flat (common/flat_index.wgsl, from params.origin), or in a split gather per part
// (common/gather_parts.wgsl: PARTS_D runs of the ROIs x PARTS_H runs of output rows x
// PARTS_W runs of output columns).  It visits the ROIs its tile's mask names
// (roi_align_tiles.wgsl), in increasing order, and in each the outputs whose samples read its
// row and column (the region table's [lo, hi): common/roi_align_table.wgsl), adding
//     average: dy * (the samples' weights of its row) * (of its column) / samples
//     maximum: dy * the weight of the element in the output's first largest sample (`arg`,
//              which the walk wrote: iy, ix, corner)
// in f32, in increasing (r, oh, ow) order.  No atomics: the same bits run after run.
//
// Prepended by poolgpu.kernels: the value type (to_f32, from_f32) and the tensors dy (dy_load,
// {R, C, out_h, out_w}), arg (arg_word), table (table_word), mask (mask_word), dx (dx_store)
// and part (part_word_store); library: roi_align_table.wgsl, tile_masks.wgsl, taps.wgsl, gather_parts.wgsl,
// flat_index.wgsl, as_written.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

override REDUCE_MAX: bool = false;
override NEAREST: bool = false;
override WEIGHTED: bool = false;

// The weight of element e of a sample read as `l` along one axis (the bilinear weight, or 1
// where it is the nearest element).
fn weight_at(l: Lerp, e: u32) -> f32 {
    if (NEAREST) { return select(0.0, 1.0, nearest_of(l) == e); }
    return select(0.0, 1.0 - l.frac, l.low == e) + select(0.0, l.frac, l.high == e);
}

// The summed weights of element e in the samples [a, b) of output o along an axis.
fn axis_weight(ax: Axis, o: u32, out: u32, size: u32, run: vec2<u32>, e: u32) -> f32 {
    var w = 0.0;
    for (var i = run.x; i < run.y; i++) {
        w += weight_at(lerp_of(sample_at(ax, o, i, out), size), e);
    }
    return w;
}

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let local = flat_index(wg, groups, lane, WG_X, params.total);
    if (local >= params.total) { return; }
    let t = params.origin + local;
    let e = t / PARTS;
    let part = t % PARTS;
    let rois = part_of(vec2<u32>(0u, params.rois), part / (PARTS_H * PARTS_W), PARTS_D);
    let out_rows = part_of(vec2<u32>(0u, params.out_h), (part / PARTS_W) % PARTS_H, PARTS_H);
    let out_columns = part_of(vec2<u32>(0u, params.out_w), part % PARTS_W, PARTS_W);
    let x = e % params.in_w;
    let y = (e / params.in_w) % params.in_h;
    let nc = e / (params.in_w * params.in_h);
    let c = nc % params.channels;
    let n = nc / params.channels;
    let masks = tile_masks(n, y, x);
    var sum = 0.0;
    for (var word = rois.x / 32u; word * 32u < rois.y; word++) {
        var bits = mask_word(masks + word);
        for (var bit = 0u; bit < 32u; bit++) {
            if (bits == 0u) { break; }
            let k = countTrailingZeros(bits);
            bits &= bits - 1u;
            let r = word * 32u + k;
            if (r < rois.x || r >= rois.y) { continue; }
            let row = params.table_base + r * roi_row_words();
            let ay = roi_axis(row, 0u);
            let ax = roi_axis(row, 1u);
            let count = f32(ay.n) * f32(ax.n);
            let dy_roi = params.dy_base + r * params.dy_n + c * params.dy_c;
            let arg_roi = params.arg_base + (r * params.channels + c) * params.out_h * params.out_w * 3u;
            for (var oh = out_rows.x; oh < out_rows.y; oh++) {
                let ey = roi_entry(row, 0u, oh);
                if (y < ey.z || y >= ey.w) { continue; }
                var wy = 0.0;
                if (!REDUCE_MAX) { wy = axis_weight(ay, oh, params.out_h, params.in_h, ey.xy, y); }
                for (var ow = out_columns.x; ow < out_columns.y; ow++) {
                    let ex = roi_entry(row, 1u, ow);
                    if (x < ex.z || x >= ex.w) { continue; }
                    let g = to_f32(dy_load(dy_roi + oh * params.dy_h + ow * params.dy_w));
                    if (!REDUCE_MAX) {
                        let wx = axis_weight(ax, ow, params.out_w, params.in_w, ex.xy, x);
                        sum += as_written(as_written(g * as_written(wy * wx)) / count);
                        continue;
                    }
                    let at = arg_roi + (oh * params.out_w + ow) * 3u;
                    let corner = arg_word(at + 2u);
                    if (corner == 4u) { continue; }   // the maximum is no element's
                    let ly = lerp_of(sample_at(ay, oh, arg_word(at), params.out_h), params.in_h);
                    let lx = lerp_of(sample_at(ax, ow, arg_word(at + 1u), params.out_w), params.in_w);
                    var w = weight_at(ly, y) * weight_at(lx, x);
                    if (WEIGHTED && !NEAREST) {   // the one corner whose weighted value won
                        let cy = select(ly.low, ly.high, corner >= 2u);
                        let cx = select(lx.low, lx.high, (corner & 1u) == 1u);
                        let wcy = select(1.0 - ly.frac, ly.frac, corner >= 2u);
                        let wcx = select(1.0 - lx.frac, lx.frac, (corner & 1u) == 1u);
                        w = select(0.0, wcy * wcx, cy == y && cx == x);
                    }
                    sum += as_written(g * w);
                }
            }
        }
    }
    gather_store(t, params.dx_base + n * params.dx_n + c * params.dx_c + y * params.dx_h + x * params.dx_w, sum);
}

// ROI pooling gradient: a gather, after the bins walk (common/window_walk_bins.wgsl) has
// written each bin's argmax (a flat logical input index; an empty bin's is never a covered
// element) into the scratch `arg`.  One invocation per dx element {N, C, H, W}, numbered flat
// (common/flat_index.wgsl, from params.origin), or in a split gather per part of the ROIs
// (common/gather_parts.wgsl: PARTS runs of the ROIs): it visits the ROIs its tile's mask names
// (roi_pool_tiles.wgsl: those whose bins meet the tile), in order, and in each the run of
// bins covering it (common/bin_search.wgsl), adding the dy of
// those whose argmax it is, in increasing (r, oh, ow) order, as torchvision's CPU kernel adds
// them.  No atomics and a fixed order: the same inputs give bit-identical dx, run after run.
// The sum is f32 (FLOAT16 and BFLOAT16 rounded once at the end).
//
// Prepended by poolgpu.kernels: the value type (to_f32, from_f32) and the tensors dy (dy_load,
// {R, C, pooled_h, pooled_w}), arg (arg_load, u32, dy's sizes), bins (bins_load: the ROI bin
// table of roi_bins.wgsl, one row per ROI), mask (mask_word) and dx (dx_store); library: tile_masks.wgsl, taps.wgsl,
// gather_parts.wgsl, bin_search.wgsl, flat_index.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let local = flat_index(wg, groups, lane, WG_X, params.total);
    if (local >= params.total) { return; }
    let t = params.origin + local;
    let e = t / PARTS;
    let rois = part_of(vec2<u32>(0u, params.rois), t % PARTS, PARTS);
    let rows = e / params.in_w;          // (n, c, h)
    let w = e - rows * params.in_w;
    let nc = rows / params.in_h;
    let h = rows - nc * params.in_h;
    let n = nc / params.channels;
    let c = nc - n * params.channels;
    // a row: the batch word, the unit D pair, pooled_h H pairs, pooled_w W pairs
    let row_words = 3u + 2u * (params.pooled_h + params.pooled_w);
    let masks = tile_masks(n, h, w);
    var sum = 0.0;
    for (var word = rois.x / 32u; word * 32u < rois.y; word++) {
        var bits = mask_word(masks + word);
        for (var bit = 0u; bit < 32u; bit++) {
            if (bits == 0u) { break; }
            let r = word * 32u + countTrailingZeros(bits);
            bits &= bits - 1u;
            if (r < rois.x || r >= rois.y) { continue; }
            let row = params.bins_base + r * row_words;   // (of image n: the mask says)
            // outside the ROI's bins (their starts and ends never decrease): nothing to search
            let last_h = row + 2u + 2u * params.pooled_h;
            let last_w = last_h + 2u * params.pooled_w;
            if (h < bins_load(row + 3u) || h >= bins_load(last_h) || w < bins_load(last_h + 1u)
                || w >= bins_load(last_w)) { continue; }
            let hs = covering_run(row + 3u, params.pooled_h, h);
            let ws = covering_run(row + 3u + 2u * params.pooled_h, params.pooled_w, w);
            let dy_roi = params.dy_base + r * params.dy_n + c * params.dy_c;
            let arg_roi = params.arg_base + r * params.arg_n + c * params.arg_c;
            for (var oh = hs.x; oh < hs.y; oh++) {
                for (var ow = ws.x; ow < ws.y; ow++) {
                    if (arg_load(arg_roi + oh * params.arg_h + ow * params.arg_w) == e) {
                        sum += to_f32(dy_load(dy_roi + oh * params.dy_h + ow * params.dy_w));
                    }
                }
            }
        }
    }
    gather_store(t, params.dx_base + n * params.dx_n + c * params.dx_c + h * params.dx_h + w * params.dx_w, sum);
}

// ROI pooling gradient: a gather by blocks, after the bins walk (common/window_walk_bins.wgsl)
// has written each bin's argmax (a flat logical input index; an empty bin's is never a
// covered element) into the scratch `arg`.  One invocation per 8 x 8 block of a dx plane
// {N, C, H, W} (numbered as CHANNEL_LANES says).  It visits the ROIs of [roi_first, roi_end)
// that its tile's mask names (roi_pool_tiles.wgsl; tiles are 8 x 2^k elements, so a block
// lies in one), in order, and in each only the bins meeting the block
// (common/bin_search.wgsl), adding the dy of each bin whose argmax lies in the block to that
// element's sum.  An ROI costs the bins reaching the block, not each of the block's 64
// elements searching the ROI's bins (a gather of one invocation per element): the work grows
// with ROIs x bins.  Where more ROIs reach a block than one invocation may visit, passes over
// runs of the ROIs follow one another, carrying the sums (common/carried_blocks.wgsl): each
// element adds its bins in increasing (r, oh, ow) order in one chain of additions, as
// torchvision's CPU kernel adds them, however many runs.  No atomics: the same inputs give
// bit-identical dx, run after run.  The sums are f32 (FLOAT16 and BFLOAT16 rounded once at the
// end).
//
// Prepended by poolgpu.kernels: the value type (to_f32, from_f32) and the tensors dy (dy_load,
// {R, C, pooled_h, pooled_w}), arg (arg_load, u32, dy's sizes), bins (bins_load: the ROI bin
// table of roi_bins.wgsl, one row per ROI), mask (mask_word), dx (dx_store) and acc (acc_word,
// acc_word_store); library: carried_blocks.wgsl, tile_masks.wgsl, bin_search.wgsl,
// divide.wgsl, flat_index.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

// Invocations numbered with the channels fastest ({N, blocks, C}), so that neighbouring
// lanes take the same block of neighbouring planes: they visit the same ROIs and the same bins
// (the same searches, uniform control flow), each reading its own channel's argmax and dy.
// Else numbered {N, C, blocks}: neighbouring lanes take neighbouring blocks of a plane.
override CHANNEL_LANES: bool = false;

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let local = flat_index(wg, groups, lane, WG_X, params.total);
    if (local >= params.total) { return; }
    let t = params.origin + local;
    let blocks_x = (params.in_w + BLOCK - 1u) / BLOCK;
    let blocks = blocks_x * ((params.in_h + BLOCK - 1u) / BLOCK);
    var block: u32;
    var n: u32;
    var c: u32;
    if (CHANNEL_LANES) {
        c = t % params.channels;
        let image_block = t / params.channels;   // n * blocks + block
        n = image_block / blocks;
        block = image_block - n * blocks;
    } else {
        let plane = t / blocks;                 // n * C + c
        block = t - plane * blocks;
        n = plane / params.channels;
        c = plane - n * params.channels;
    }
    let plane = n * params.channels + c;
    let y0 = (block / blocks_x) * BLOCK;
    let x0 = (block % blocks_x) * BLOCK;
    let y1 = min(y0 + BLOCK, params.in_h);
    let x1 = min(x0 + BLOCK, params.in_w);
    let plane_size = params.in_h * params.in_w;
    let first = plane * plane_size;           // the plane's first flat index (arg's numbering)
    // a row: the batch word, the unit D pair, pooled_h H pairs, pooled_w W pairs
    let row_words = 3u + 2u * (params.pooled_h + params.pooled_w);
    let masks = tile_masks(n, y0, x0);
    // BLOCK x BLOCK: zero, or carried from the run before.  (Elements, not carried_block's
    // vec4 rows: the walk adds at computed indices, which into vec4 rows took 1.2x the time
    // on lavapipe.)
    var sums: array<f32, 64>;
    for (var j = 0u; j < BLOCK * BLOCK && !FIRST; j++) {
        let h = y0 + j / BLOCK;
        let w = x0 + j % BLOCK;
        if (h < y1 && w < x1) { sums[j] = bitcast<f32>(acc_word(carried_at(plane, h, w))); }
    }
    var touched = false;
    for (var word = params.roi_first / 32u; word * 32u < params.roi_end; word++) {
        var bits = mask_word(masks + word);
        for (var bit = 0u; bit < 32u; bit++) {
            if (bits == 0u) { break; }
            let r = word * 32u + countTrailingZeros(bits);
            bits &= bits - 1u;
            if (r < params.roi_first || r >= params.roi_end) { continue; }
            touched = true;
            let h_pairs = params.bins_base + r * row_words + 3u;   // (of image n: the mask says)
            let w_pairs = h_pairs + 2u * params.pooled_h;
            // the bins meeting rows [y0, y1): from the first ending after y0 to the first starting at y1 or later
            let hs = vec2<u32>(first_above(h_pairs + 1u, params.pooled_h, y0),
                               first_above(h_pairs, params.pooled_h, y1 - 1u));
            let ws = vec2<u32>(first_above(w_pairs + 1u, params.pooled_w, x0),
                               first_above(w_pairs, params.pooled_w, x1 - 1u));
            let dy_roi = params.dy_base + r * params.dy_n + c * params.dy_c;
            let arg_roi = params.arg_base + r * params.arg_n + c * params.arg_c;
            for (var oh = hs.x; oh < hs.y; oh++) {
                for (var ow = ws.x; ow < ws.y; ow++) {
                    let at = arg_load(arg_roi + oh * params.arg_h + ow * params.arg_w) - first;   // wraps below
                    let h = divide(at, params.in_w, params.in_w_magic, params.in_w_shift);
                    let w = at - h * params.in_w;
                    if (at < plane_size && h >= y0 && h < y1 && w >= x0 && w < x1) {
                        let k = (h - y0) * BLOCK + w - x0;
                        sums[k] += to_f32(dy_load(dy_roi + oh * params.dy_h + ow * params.dy_w));
                    }
                }
            }
        }
    }
    if (!touched && !FIRST && !LAST) { return; }   // acc holds this block's sums already
    for (var k = 0u; k < BLOCK * BLOCK; k++) {
        let h = y0 + k / BLOCK;
        let w = x0 + k % BLOCK;
        if (h < y1 && w < x1) { finish_element(n, c, plane, h, w, sums[k]); }
    }
}

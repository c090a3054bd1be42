// ROI pooling gradient: a gather by blocks, after the bins walk (common/window_walk_bins.wgsl)
// has written each bin's argmax (a flat logical input index; an empty bin's is never a
// covered element) into the scratch `arg`.  One invocation per 8 x 8 block of a dx plane
// {N, C, H, W} (numbered as CHANNEL_LANES says), or in a split gather per part of the ROIs
// (common/gather_parts.wgsl: PARTS runs of the ROIs).  It visits the ROIs its tile's
// mask names (roi_pool_tiles.wgsl; tiles are 8 x 2^k elements, so a block lies in one), in
// order, and in each only the bins meeting the block (common/bin_search.wgsl), adding the dy
// of each bin whose argmax lies in the block to that element's sum.  An ROI costs the bins
// reaching the block, not each of the block's 64 elements searching the ROI's bins (a gather
// of one invocation per element): the work grows with ROIs x bins.  Each element's sum adds
// its bins in increasing (r, oh, ow) order, as torchvision's CPU kernel adds them.  No
// atomics: the same inputs give bit-identical dx, run after run.
// The sums are f32 (FLOAT16 and BFLOAT16 rounded once at the end).
//
// Prepended by poolgpu.kernels: the value type (to_f32, from_f32) and the tensors dy (dy_load,
// {R, C, pooled_h, pooled_w}), arg (arg_load, u32, dy's sizes), bins (bins_load: the ROI bin
// table of roi_bins.wgsl, one row per ROI), mask (mask_word) and dx (dx_store); library:
// tile_masks.wgsl, taps.wgsl, gather_parts.wgsl, bin_search.wgsl, divide.wgsl, flat_index.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

const BLOCK: u32 = 8u;

// Invocations numbered with the channels fastest ({N, blocks, PARTS, C}), so that neighbouring
// lanes take the same block of neighbouring planes: they visit the same ROIs and the same bins
// (the same searches, uniform control flow), each reading its own channel's argmax and dy.
// Else numbered {N, C, blocks, PARTS}: neighbouring lanes take neighbouring blocks of a plane.
override CHANNEL_LANES: bool = false;

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let local = flat_index(wg, groups, lane, WG_X, params.total);
    if (local >= params.total) { return; }
    let t = params.origin + local;
    let blocks_x = (params.in_w + BLOCK - 1u) / BLOCK;
    let blocks = blocks_x * ((params.in_h + BLOCK - 1u) / BLOCK);
    var part: u32;
    var block: u32;
    var n: u32;
    var c: u32;
    if (CHANNEL_LANES) {
        c = t % params.channels;
        let block_part = t / params.channels;   // (n * blocks + block) * PARTS + part
        part = block_part % PARTS;
        let image_block = block_part / PARTS;
        n = image_block / blocks;
        block = image_block - n * blocks;
    } else {
        part = t % PARTS;
        let plane = t / PARTS / blocks;       // n * C + c
        block = t / PARTS - plane * blocks;
        n = plane / params.channels;
        c = plane - n * params.channels;
    }
    let plane = n * params.channels + c;
    let rois = part_of(vec2<u32>(0u, params.rois), part, PARTS);
    let y0 = (block / blocks_x) * BLOCK;
    let x0 = (block % blocks_x) * BLOCK;
    let y1 = min(y0 + BLOCK, params.in_h);
    let x1 = min(x0 + BLOCK, params.in_w);
    let plane_size = params.in_h * params.in_w;
    let first = plane * plane_size;           // the plane's first flat index (arg's numbering)
    // a row: the batch word, the unit D pair, pooled_h H pairs, pooled_w W pairs
    let row_words = 3u + 2u * (params.pooled_h + params.pooled_w);
    let masks = tile_masks(n, y0, x0);
    var sums: array<f32, 64>;                 // BLOCK x BLOCK, zero
    for (var word = rois.x / 32u; word * 32u < rois.y; word++) {
        var bits = mask_word(masks + word);
        for (var bit = 0u; bit < 32u; bit++) {
            if (bits == 0u) { break; }
            let r = word * 32u + countTrailingZeros(bits);
            bits &= bits - 1u;
            if (r < rois.x || r >= rois.y) { continue; }
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
    for (var k = 0u; k < BLOCK * BLOCK; k++) {
        let h = y0 + k / BLOCK;
        let w = x0 + k % BLOCK;
        if (h < y1 && w < x1) {
            let e = first + h * params.in_w + w;
            gather_store(e * PARTS + part, params.dx_base + n * params.dx_n + c * params.dx_c + h * params.dx_h
                         + w * params.dx_w, sums[k]);
        }
    }
}

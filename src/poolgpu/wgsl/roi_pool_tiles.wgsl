// ROI pooling's gradient, after the bins pass: which ROIs reach each tile of the input (tiles
// of TILE x TILE elements of each image), as bit masks (word w of tile t: ROIs 32 w to
// 32 w + 31), a bit set where the ROI's bins (roi_bins.wgsl's table: clamped, their starts and
// ends never decreasing) meet the tile.  The gather (roi_pool_grad.wgsl) then visits, for each
// block of the tile, only the ROIs of its tile's mask.  One invocation per (image, tile, word).
//
// Prepended by poolgpu.kernels: the value type (unused) and the tensors bins (bins_load) and
// mask (mask_word_store); library: tile_masks.wgsl, flat_index.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let index = flat_index(wg, groups, lane, WG_X, params.total);
    if (index >= params.total) { return; }
    let m = mask_word_of(index);
    let row_words = 3u + 2u * (params.pooled_h + params.pooled_w);
    var bits = 0u;
    for (var k = 0u; k < 32u; k++) {
        let r = m.word * 32u + k;
        if (r >= params.rois) { break; }
        let row = params.bins_base + r * row_words;
        if (bins_load(row) != m.n) { continue; }
        let h = row + 3u;                              // the H pairs, then the W pairs
        let w = h + 2u * params.pooled_h;
        let rows = vec2<u32>(bins_load(h), bins_load(h + 2u * params.pooled_h - 1u));
        let columns = vec2<u32>(bins_load(w), bins_load(w + 2u * params.pooled_w - 1u));
        bits |= select(0u, 1u << k, tile_meets(m, rows, columns));
    }
    mask_word_store(params.mask_base + index, bits);
}

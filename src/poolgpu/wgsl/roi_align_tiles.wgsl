// The ROI gradients, pass 2: which ROIs reach each tile of the input (tiles of TILE x TILE
// elements of each image), as bit masks: word w of tile t holds ROIs 32 w to 32 w + 31, a
// bit set where the ROI reads its image inside the tile (the rows and columns its samples
// read, from the region table: common/roi_align_table.wgsl).  The gathers then visit, for
// each element, only the ROIs of its tile's mask.  One invocation per (image, tile, word).
//
// Prepended by poolgpu.kernels: the value type (unused) and the tensors table (table_word)
// and mask (mask_word_store); library: roi_align_table.wgsl, tile_masks.wgsl, flat_index.wgsl, as_written.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let index = flat_index(wg, groups, lane, WG_X, params.total);
    if (index >= params.total) { return; }
    let m = mask_word_of(index);
    var bits = 0u;
    for (var k = 0u; k < 32u; k++) {
        let r = m.word * 32u + k;
        if (r >= params.rois) { break; }
        let row = params.table_base + r * roi_row_words();
        if (table_word(row) != m.n) { continue; }
        var rows = vec2<u32>(0xffffffffu, 0u);
        for (var oh = 0u; oh < params.out_h; oh++) {
            let e = roi_entry(row, 0u, oh);
            if (e.w > e.z) { rows = vec2<u32>(min(rows.x, e.z), max(rows.y, e.w)); }
        }
        var columns = vec2<u32>(0xffffffffu, 0u);
        for (var ow = 0u; ow < params.out_w; ow++) {
            let e = roi_entry(row, 1u, ow);
            if (e.w > e.z) { columns = vec2<u32>(min(columns.x, e.z), max(columns.y, e.w)); }
        }
        bits |= select(0u, 1u << k, tile_meets(m, rows, columns));
    }
    mask_word_store(params.mask_base + index, bits);
}

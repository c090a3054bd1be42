// The ROI gradients' tile masks (roi_align_tiles.wgsl, roi_pool_tiles.wgsl write them; the
// gathers roi_align_grad.wgsl and roi_pool_grad.wgsl read them): per image, tiles of
// params.tile x params.tile input elements (params.tiles of them, params.tiles_x per row of
// tiles), each with params.mask_words words of bits, ROI 32 w + k at bit k of word w.

// Word `index` of the masks: its image, word, and its tile's first row and column.
struct MaskWord { n: u32, word: u32, y: u32, x: u32 }
fn mask_word_of(index: u32) -> MaskWord {
    let tile = (index / params.mask_words) % params.tiles;
    return MaskWord(index / (params.mask_words * params.tiles), index % params.mask_words,
                    (tile / params.tiles_x) * params.tile, (tile % params.tiles_x) * params.tile);
}

// Whether the input rows [rows.x, rows.y) and columns [columns.x, columns.y) meet its tile.
fn tile_meets(m: MaskWord, rows: vec2<u32>, columns: vec2<u32>) -> bool {
    return rows.x < m.y + params.tile && rows.y > m.y && columns.x < m.x + params.tile && columns.y > m.x;
}

// The first mask word of element (y, x) of image n's tile.
fn tile_masks(n: u32, y: u32, x: u32) -> u32 {
    return params.mask_base + (n * params.tiles + (y / params.tile) * params.tiles_x + x / params.tile) * params.mask_words;
}

// ROI align's input gradient: a gather by blocks.  One invocation per 8 x 8 block of a dx
// plane {N, C, H, W} (blocks numbered flat, from params.origin).  It visits the ROIs
// [roi_first, roi_end) that its tile's mask names (roi_align_tiles.wgsl; tiles are 8 x 2^k
// elements, so a block lies in one), in increasing order, and in each only the outputs whose
// samples read the block (the region table's rows and columns [lo, hi):
// common/roi_align_table.wgsl), adding
//     average: dy / samples * (the weights of the output's samples along Y) x (along X),
//              separably: per output row, the sum over its columns of dy / samples * the
//              X weights of the block's 8 columns, times the Y weights of its 8 rows
//     maximum: dy * the weight of each element in the output's first largest sample (`arg`,
//              which the walk wrote: iy, ix, corner)
// An ROI costs the outputs and samples reaching the block, not each of the block's elements
// searching the ROI's outputs: the work grows with ROIs x outputs x samples.  Where more ROIs
// reach a block than one invocation may visit, passes over runs of the ROIs (or of one ROI's
// output rows, or of one row's columns) follow one another, carrying the sums
// (common/carried_blocks.wgsl), so each element adds the ROIs in increasing order in one
// chain of additions.  No atomics: the same inputs give the same bits, run after run.  Sums in f32 (FLOAT16 and
// BFLOAT16 rounded once at the end).
//
// Prepended by poolgpu.kernels: the value type (to_f32, from_f32) and the tensors dy (dy_load,
// {R, C, out_h, out_w}), arg (arg_word), table (table_word), mask (mask_word), dx (dx_store)
// and acc (acc_word, acc_word_store); library: roi_align_table.wgsl, roi_align_block.wgsl,
// carried_blocks.wgsl, tile_masks.wgsl, flat_index.wgsl, as_written.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

override REDUCE_MAX: bool = false;
override WEIGHTED: bool = false;
override NEAR_Y: bool = false; // search the samples near the block along Y (run_weights)
override NEAR_X: bool = false;

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let local = flat_index(wg, groups, lane, WG_X, params.total);
    if (local >= params.total) { return; }
    let t = params.origin + local;
    let blocks_x = (params.in_w + BLOCK - 1u) / BLOCK;
    let blocks = blocks_x * ((params.in_h + BLOCK - 1u) / BLOCK);
    let plane = t / blocks;                  // n * C + c
    let block = t - plane * blocks;
    let n = plane / params.channels;
    let c = plane - n * params.channels;
    let y0 = (block / blocks_x) * BLOCK;
    let x0 = (block % blocks_x) * BLOCK;
    let y1 = min(y0 + BLOCK, params.in_h);
    let x1 = min(x0 + BLOCK, params.in_w);
    let masks = tile_masks(n, y0, x0);
    var sums = carried_block(plane, y0, x0, y1, x1);   // row j: sums[2 j] (columns 0 to 3), sums[2 j + 1]
    var touched = false;
    for (var word = params.roi_first / 32u; word * 32u < params.roi_end; word++) {
        var bits = mask_word(masks + word);
        for (var bit = 0u; bit < 32u; bit++) {
            if (bits == 0u) { break; }
            let r = word * 32u + countTrailingZeros(bits);
            bits &= bits - 1u;
            if (r < params.roi_first || r >= params.roi_end) { continue; }
            touched = true;
            let row = params.table_base + r * roi_row_words();
            let ay = roi_axis(row, 0u);
            let ax = roi_axis(row, 1u);
            let count = f32(ay.n) * f32(ax.n);
            // (a pass of one ROI may take a run of its outputs: [oh_first, oh_end) x [ow_first, ow_end))
            let rows = clamp(meeting(row, 0u, params.out_h, y0, y1), vec2<u32>(params.oh_first),
                             vec2<u32>(params.oh_end));
            let columns = clamp(meeting(row, 1u, params.out_w, x0, x1), vec2<u32>(params.ow_first),
                                vec2<u32>(params.ow_end));
            let dy_roi = params.dy_base + r * params.dy_n + c * params.dy_c;
            let arg_roi = params.arg_base + (r * params.channels + c) * params.out_h * params.out_w * 3u;
            for (var oh = rows.x; oh < rows.y; oh++) {
                let ey = roi_entry(row, 0u, oh);
                if (!meets(ey, y0, y1)) { continue; }
                var wy = no_weights();
                if (!REDUCE_MAX) { wy = run_weights(ay, oh, params.out_h, params.in_h, ey.xy, y0, NEAR_Y); }
                var across = no_weights();   // the average: sum over the columns of dy / samples * X weights
                for (var ow = columns.x; ow < columns.y; ow++) {
                    let ex = roi_entry(row, 1u, ow);
                    if (!meets(ex, x0, x1)) { continue; }
                    let g = to_f32(dy_load(dy_roi + oh * params.dy_h + ow * params.dy_w));
                    let zero = vec4<f32>(0.0);
                    if (!REDUCE_MAX) {
                        let wx = run_weights(ax, ow, params.out_w, params.in_w, ex.xy, x0, NEAR_X);
                        let share = g / count;   // (elements no sample weighs get nothing, even from an infinite dy)
                        across = Weights(across.lo + select(zero, share * wx.lo, wx.lo != zero),
                                         across.hi + select(zero, share * wx.hi, wx.hi != zero));
                        continue;
                    }
                    let at = arg_roi + (oh * params.out_w + ow) * 3u;
                    let corner = arg_word(at + 2u);
                    if (corner == 4u) { continue; }   // the maximum is no element's
                    let ly = lerp_of(sample_at(ay, oh, arg_word(at), params.out_h), params.in_h);
                    let lx = lerp_of(sample_at(ax, ow, arg_word(at + 1u), params.out_w), params.in_w);
                    var sy = sample_weights(ly, y0);
                    var sx = sample_weights(lx, x0);
                    if (WEIGHTED && !NEAREST) {   // the one corner whose weighted value won
                        let high_y = corner >= 2u;
                        let high_x = (corner & 1u) == 1u;
                        sy = one_weight(select(ly.low, ly.high, high_y), y0, select(1.0 - ly.frac, ly.frac, high_y));
                        sx = one_weight(select(lx.low, lx.high, high_x), x0, select(1.0 - lx.frac, lx.frac, high_x));
                    }
                    // the sample's rows: low and high (one where they are the same element)
                    for (var q = 0u; q < 2u; q++) {
                        let y = select(ly.low, ly.high, q == 1u);
                        if (q == 1u && ly.high == ly.low) { break; }
                        if (y < y0 || y >= y1) { continue; }
                        let j = y - y0;
                        let w = weight_of(sy, j);
                        if (w == 0.0) { continue; }
                        sums[2u * j] += select(zero, g * (w * sx.lo), sx.lo != zero);
                        sums[2u * j + 1u] += select(zero, g * (w * sx.hi), sx.hi != zero);
                    }
                }
                if (REDUCE_MAX) { continue; }
                for (var j = 0u; j < BLOCK; j++) {
                    let w = weight_of(wy, j);
                    if (w == 0.0) { continue; }
                    sums[2u * j] += w * across.lo;
                    sums[2u * j + 1u] += w * across.hi;
                }
            }
        }
    }
    if (!touched && !FIRST && !LAST) { return; }   // acc holds this block's sums already
    for (var k = 0u; k < BLOCK * BLOCK; k++) {
        let y = y0 + k / BLOCK;
        let x = x0 + k % BLOCK;
        if (y >= y1 || x >= x1) { continue; }
        finish_element(n, c, plane, y, x, sums[k / 4u][k % 4u]);
    }
}

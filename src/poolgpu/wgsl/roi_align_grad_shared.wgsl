// ROI align's input gradient, the average: a gather by blocks, one workgroup per 8 x 8 block
// of WG_X channels' dx planes {N, C, H, W} (lane k: channel group * WG_X + k).  What
// roi_align_grad.wgsl computes per invocation, with the work that depends on no channel
// done once per workgroup: one lane lists the ROIs its tile's mask names (roi_align_tiles.wgsl),
// LIST_WORDS words at a time, and for each of them, in increasing order, one lane finds the
// output rows and columns whose samples read the block
// (the region table's spans), the lanes share out the weights of those rows' samples on the
// block's 8 rows and of those columns' on its 8 columns into workgroup memory, and then every
// lane adds its channel's
//     dy / samples * (the Y weights) x (the sum over the row's columns of the X weights)
// to its block's 64 sums, as roi_align_grad.wgsl does (the same operations in the same
// order: the same bits).  Outputs of at most MAX_OUT rows and columns.  Passes over runs of
// the ROIs (or of one ROI's output rows or columns) carry their sums as there.
//
// Prepended by poolgpu.kernels: the value type (to_f32, from_f32) and the tensors dy (dy_load,
// {R, C, out_h, out_w}), table (table_word), mask (mask_word), dx (dx_store) and acc
// (acc_word, acc_word_store); library: roi_align_table.wgsl, roi_align_block.wgsl,
// carried_blocks.wgsl, tile_masks.wgsl, as_written.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

override NEAR_Y: bool = false; // search the samples near the block along Y (run_weights)
override NEAR_X: bool = false;

const MAX_OUT: u32 = 32u;
// Mask words one lane turns into a list of ROIs per round: the lanes wait for each other
// once per round, not twice per word (a barrier costs a CPU adapter a switch of every
// SIMD group of the workgroup).
const LIST_WORDS: u32 = 8u;

var<workgroup> listed: array<u32, 32u * LIST_WORDS>;   // a round's ROIs, in order
var<workgroup> listed_count: u32;
var<workgroup> spans: vec4<u32>;                       // the rows [x, y) and columns [z, w) meeting the block
var<workgroup> meet: array<u32, 64>;                   // row k at k, column k at MAX_OUT + k: 1 where it meets
var<workgroup> weights: array<Weights, 64>;            // row k's Y weights at k, column k's X weights at MAX_OUT + k

// sums[2 j], sums[2 j + 1] += w_j * across for the block's rows j (skipped where w_j is 0),
// written out: the array stays in registers.
fn add_rows(sums: ptr<function, array<vec4<f32>, 16>>, wy: Weights, across: Weights) {
    (*sums)[0] = add_scaled((*sums)[0], wy.lo.x, across.lo);
    (*sums)[1] = add_scaled((*sums)[1], wy.lo.x, across.hi);
    (*sums)[2] = add_scaled((*sums)[2], wy.lo.y, across.lo);
    (*sums)[3] = add_scaled((*sums)[3], wy.lo.y, across.hi);
    (*sums)[4] = add_scaled((*sums)[4], wy.lo.z, across.lo);
    (*sums)[5] = add_scaled((*sums)[5], wy.lo.z, across.hi);
    (*sums)[6] = add_scaled((*sums)[6], wy.lo.w, across.lo);
    (*sums)[7] = add_scaled((*sums)[7], wy.lo.w, across.hi);
    (*sums)[8] = add_scaled((*sums)[8], wy.hi.x, across.lo);
    (*sums)[9] = add_scaled((*sums)[9], wy.hi.x, across.hi);
    (*sums)[10] = add_scaled((*sums)[10], wy.hi.y, across.lo);
    (*sums)[11] = add_scaled((*sums)[11], wy.hi.y, across.hi);
    (*sums)[12] = add_scaled((*sums)[12], wy.hi.z, across.lo);
    (*sums)[13] = add_scaled((*sums)[13], wy.hi.z, across.hi);
    (*sums)[14] = add_scaled((*sums)[14], wy.hi.w, across.lo);
    (*sums)[15] = add_scaled((*sums)[15], wy.hi.w, across.hi);
}

fn add_scaled(sum: vec4<f32>, w: f32, v: vec4<f32>) -> vec4<f32> { return select(sum + w * v, sum, w == 0.0); }

// The block's sums finished (finish_element) where inside the plane, written out as add_rows.
fn finish_rows(n: u32, c: u32, plane: u32, y0: u32, x0: u32, y1: u32, x1: u32,
               sums: ptr<function, array<vec4<f32>, 16>>) {
    finish_row(n, c, plane, y0, x0, y1, x1, (*sums)[0], (*sums)[1]);
    finish_row(n, c, plane, y0 + 1u, x0, y1, x1, (*sums)[2], (*sums)[3]);
    finish_row(n, c, plane, y0 + 2u, x0, y1, x1, (*sums)[4], (*sums)[5]);
    finish_row(n, c, plane, y0 + 3u, x0, y1, x1, (*sums)[6], (*sums)[7]);
    finish_row(n, c, plane, y0 + 4u, x0, y1, x1, (*sums)[8], (*sums)[9]);
    finish_row(n, c, plane, y0 + 5u, x0, y1, x1, (*sums)[10], (*sums)[11]);
    finish_row(n, c, plane, y0 + 6u, x0, y1, x1, (*sums)[12], (*sums)[13]);
    finish_row(n, c, plane, y0 + 7u, x0, y1, x1, (*sums)[14], (*sums)[15]);
}

fn finish_row(n: u32, c: u32, plane: u32, y: u32, x0: u32, y1: u32, x1: u32, lo: vec4<f32>, hi: vec4<f32>) {
    if (y >= y1) { return; }
    finish_four(n, c, plane, y, x0, x1, lo);
    finish_four(n, c, plane, y, x0 + 4u, x1, hi);
}

fn finish_four(n: u32, c: u32, plane: u32, y: u32, x: u32, x1: u32, four: vec4<f32>) {
    if (x < x1) { finish_element(n, c, plane, y, x, four.x); }
    if (x + 1u < x1) { finish_element(n, c, plane, y, x + 1u, four.y); }
    if (x + 2u < x1) { finish_element(n, c, plane, y, x + 2u, four.z); }
    if (x + 3u < x1) { finish_element(n, c, plane, y, x + 3u, four.w); }
}

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let group = wg.y * groups.x + wg.x;      // (image, block, channel group), channel groups fastest
    if (group >= params.total) { return; }
    let channel_groups = (params.channels + WG_X - 1u) / WG_X;
    let blocks_x = (params.in_w + BLOCK - 1u) / BLOCK;
    let blocks = blocks_x * ((params.in_h + BLOCK - 1u) / BLOCK);
    let image_block = group / channel_groups;
    let n = image_block / blocks;
    let block = image_block - n * blocks;
    let c = (group - image_block * channel_groups) * WG_X + lane;
    let in_c = c < params.channels;          // (the lanes past C share the work, write nothing)
    let plane = n * params.channels + c;
    let y0 = (block / blocks_x) * BLOCK;
    let x0 = (block % blocks_x) * BLOCK;
    let y1 = min(y0 + BLOCK, params.in_h);
    let x1 = min(x0 + BLOCK, params.in_w);
    let masks = tile_masks(n, y0, x0);
    var sums: array<vec4<f32>, 16>;          // row j: sums[2 j] (columns 0 to 3), sums[2 j + 1]
    if (in_c) { sums = carried_block(plane, y0, x0, y1, x1); }
    var touched = false;
    for (var word = params.roi_first / 32u; word * 32u < params.roi_end; word += LIST_WORDS) {
        workgroupBarrier();                  // (every lane has read the last round's list)
        if (lane == 0u) {
            // the ROIs of the round's words that the run takes, in increasing order
            var count = 0u;
            for (var scan = word; scan < word + LIST_WORDS && scan * 32u < params.roi_end; scan++) {
                var bits = mask_word(masks + scan);
                for (var bit = 0u; bit < 32u; bit++) {
                    if (bits == 0u) { break; }
                    let r = scan * 32u + countTrailingZeros(bits);
                    bits &= bits - 1u;
                    if (r >= params.roi_first && r < params.roi_end) {
                        listed[count] = r;
                        count++;
                    }
                }
            }
            listed_count = count;
        }
        let entries = workgroupUniformLoad(&listed_count);
        for (var entry = 0u; entry < entries; entry++) {
            let r = listed[entry];
            touched = true;
            let row = params.table_base + r * roi_row_words();
            let ay = roi_axis(row, 0u);
            let ax = roi_axis(row, 1u);
            if (lane == 0u) {
                // (a pass of one ROI may take a run of its outputs: [oh_first, oh_end) x [ow_first, ow_end))
                let rows = clamp(meeting(row, 0u, params.out_h, y0, y1), vec2<u32>(params.oh_first),
                                 vec2<u32>(params.oh_end));
                let columns = clamp(meeting(row, 1u, params.out_w, x0, x1), vec2<u32>(params.ow_first),
                                    vec2<u32>(params.ow_end));
                spans = vec4<u32>(rows, columns);
            }
            let span = workgroupUniformLoad(&spans);
            let height = span.y - span.x;
            for (var k = lane; k < height + span.w - span.z; k += WG_X) {
                let is_row = k < height;
                let o = select(span.z + k - height, span.x + k, is_row);
                let slot = select(MAX_OUT + k - height, k, is_row);
                let e = roi_entry(row, select(1u, 0u, is_row), o);
                let meets_block = select(meets(e, x0, x1), meets(e, y0, y1), is_row);
                var w = no_weights();
                if (meets_block && is_row) { w = run_weights(ay, o, params.out_h, params.in_h, e.xy, y0, NEAR_Y); }
                if (meets_block && !is_row) { w = run_weights(ax, o, params.out_w, params.in_w, e.xy, x0, NEAR_X); }
                meet[slot] = u32(meets_block);
                weights[slot] = w;
            }
            workgroupBarrier();
            if (in_c) {
                let count = f32(ay.n) * f32(ax.n);
                let dy_roi = params.dy_base + r * params.dy_n + c * params.dy_c;
                let zero = vec4<f32>(0.0);
                for (var oh = span.x; oh < span.y; oh++) {
                    if (meet[oh - span.x] == 0u) { continue; }
                    var across = no_weights();   // the sum over the columns of dy / samples * X weights
                    for (var ow = span.z; ow < span.w; ow++) {
                        let slot = MAX_OUT + ow - span.z;
                        if (meet[slot] == 0u) { continue; }
                        let g = to_f32(dy_load(dy_roi + oh * params.dy_h + ow * params.dy_w));
                        let wx = weights[slot];
                        let share = g / count;   // (elements no sample weighs get nothing, even from an infinite dy)
                        across = Weights(across.lo + select(zero, share * wx.lo, wx.lo != zero),
                                         across.hi + select(zero, share * wx.hi, wx.hi != zero));
                    }
                    add_rows(&sums, weights[oh - span.x], across);
                }
            }
        }
    }
    if (!in_c || (!touched && !FIRST && !LAST)) { return; }   // (else acc holds this block's sums already)
    finish_rows(n, c, plane, y0, x0, y1, x1, &sums);
}

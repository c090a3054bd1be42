// The sums of an 8 x 8 block of a dx plane (BLOCK x BLOCK elements, one invocation's) in the
// gathers of the ROI gradients (roi_align_grad.wgsl, roi_align_grad_shared.wgsl,
// roi_pool_grad.wgsl), over runs of the ROIs in passes one after another: FIRST starts the
// sums at zero, the others continue those the pass before saved in the f32 scratch `acc`
// (planes of dx's elements, packed), LAST writes dx.  Needs the tensors dx (dx_store) and acc
// (acc_word, acc_word_store).

override FIRST: bool = true;   // the first run of ROIs: the sums start at zero (else from acc)
override LAST: bool = true;    // the last: dx written (else the sums saved into acc)

const BLOCK: u32 = 8u;

// The block's sums carried from the runs of ROIs before this one (zero where FIRST): row j
// at [2 j] (columns 0 to 3) and [2 j + 1], written out.  Each element's sum continues one
// chain of additions, so the runs' boundaries between ROIs leave its bits as they are.
fn carried_block(plane: u32, y0: u32, x0: u32, y1: u32, x1: u32) -> array<vec4<f32>, 16> {
    var b: array<vec4<f32>, 16>;
    if (FIRST) { return b; }
    b[0] = carried_four(plane, y0, x0, y1, x1);
    b[1] = carried_four(plane, y0, x0 + 4u, y1, x1);
    b[2] = carried_four(plane, y0 + 1u, x0, y1, x1);
    b[3] = carried_four(plane, y0 + 1u, x0 + 4u, y1, x1);
    b[4] = carried_four(plane, y0 + 2u, x0, y1, x1);
    b[5] = carried_four(plane, y0 + 2u, x0 + 4u, y1, x1);
    b[6] = carried_four(plane, y0 + 3u, x0, y1, x1);
    b[7] = carried_four(plane, y0 + 3u, x0 + 4u, y1, x1);
    b[8] = carried_four(plane, y0 + 4u, x0, y1, x1);
    b[9] = carried_four(plane, y0 + 4u, x0 + 4u, y1, x1);
    b[10] = carried_four(plane, y0 + 5u, x0, y1, x1);
    b[11] = carried_four(plane, y0 + 5u, x0 + 4u, y1, x1);
    b[12] = carried_four(plane, y0 + 6u, x0, y1, x1);
    b[13] = carried_four(plane, y0 + 6u, x0 + 4u, y1, x1);
    b[14] = carried_four(plane, y0 + 7u, x0, y1, x1);
    b[15] = carried_four(plane, y0 + 7u, x0 + 4u, y1, x1);
    return b;
}

fn carried_four(plane: u32, y: u32, x: u32, y1: u32, x1: u32) -> vec4<f32> {
    if (y >= y1) { return vec4<f32>(0.0); }
    return vec4<f32>(carried_one(plane, y, x, x1), carried_one(plane, y, x + 1u, x1),
                     carried_one(plane, y, x + 2u, x1), carried_one(plane, y, x + 3u, x1));
}

fn carried_one(plane: u32, y: u32, x: u32, x1: u32) -> f32 {
    if (x >= x1) { return 0.0; }
    return bitcast<f32>(acc_word(carried_at(plane, y, x)));
}

fn carried_at(plane: u32, y: u32, x: u32) -> u32 {
    return params.acc_base + plane * params.in_h * params.in_w + y * params.in_w + x;
}

// Element (y, x) of dx plane `plane` (image n, channel c): its sum written to dx where LAST,
// else saved into acc for the next run.
fn finish_element(n: u32, c: u32, plane: u32, y: u32, x: u32, sum: f32) {
    if (LAST) {
        dx_store(params.dx_base + n * params.dx_n + c * params.dx_c + y * params.dx_h + x * params.dx_w, from_f32(sum));
    } else {
        acc_word_store(carried_at(plane, y, x), bitcast<u32>(sum));
    }
}

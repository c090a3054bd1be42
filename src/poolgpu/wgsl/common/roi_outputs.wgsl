// ROI align's outputs {R, C, out_h, out_w} numbered flat (roi_align.wgsl and its merge):
// output i's coordinates by multiply-high divisions (common/divide.wgsl), which SIMD CPU
// adapters run on all lanes at once where an integer division runs lane by lane.
//
// Reads the Params fields channels, out_h and out_w with their magic and shift.

struct RoiOutput { r: u32, c: u32, oh: u32, ow: u32 }
fn roi_output(i: u32) -> RoiOutput {
    let rows = divide(i, params.out_w, params.out_w_magic, params.out_w_shift);              // (r, c, oh)
    let planes = divide(rows, params.out_h, params.out_h_magic, params.out_h_shift);         // (r, c)
    let r = divide(planes, params.channels, params.channels_magic, params.channels_shift);
    return RoiOutput(r, planes - r * params.channels, rows - planes * params.out_h, i - rows * params.out_w);
}

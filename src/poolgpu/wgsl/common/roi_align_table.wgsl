// ROI align's region table (written by roi_align_regions.wgsl, read by roi_align.wgsl, its
// merge and its gradients), and the sample arithmetic they share.
//
// One row per ROI, in u32 words:
//     [batch (in_n where the ROI's batch index is outside the input),
//      Y: samples n, start bits, bin bits,   X: samples n, start bits, bin bits,
//      per output row oh: (a, b, lo, hi),   per output column ow: (a, b, lo, hi)]
// Along an axis, sample i in [0, n) of output coordinate o sits at (f32, as ONNX Runtime
// and torchvision compute it)
//     start + o * bin + (i - output_offset) * bin / n
// or, where ALIGN_CORNERS, at point k = o * n + i of the T = out * n points from the
// region's first corner to its last: start + k * (size / (T - 1)) (T = 1: the centre), with
// `bin` holding the region's size.  A sample outside [-1, in] along either axis reads the
// out-of-bounds value; the others clamp to [0, in - 1].  Samples move monotonically with i,
// so those inside are the run [a, b); they read rows (columns) [lo, hi).
//
// Reads the Params fields out_h, out_w (the output's height and width) and out_offset
// (output_offset's f32 bits).

override ALIGN_CORNERS: bool = false;

const ROW_HEADER: u32 = 7u;

fn roi_row_words() -> u32 { return ROW_HEADER + 4u * (params.out_h + params.out_w); }

struct Axis { n: u32, start: f32, bin: f32 }

// Axis 0 is Y (H), 1 is X (W).
fn roi_axis(row: u32, axis: u32) -> Axis {
    let at = row + 1u + 3u * axis;
    return Axis(table_word(at), bitcast<f32>(table_word(at + 1u)), bitcast<f32>(table_word(at + 2u)));
}

// The (a, b, lo, hi) entry of output coordinate o along an axis.
fn roi_entry(row: u32, axis: u32, o: u32) -> vec4<u32> {
    let at = row + ROW_HEADER + 4u * (o + axis * params.out_h);
    return vec4<u32>(table_word(at), table_word(at + 1u), table_word(at + 2u), table_word(at + 3u));
}

// Sample i of output coordinate o (of `out` along the axis): its coordinate, computed as
// written (products and quotients rounded before they are added, as a CPU computes them).
fn sample_at(ax: Axis, o: u32, i: u32, out: u32) -> f32 {
    if (ALIGN_CORNERS) {
        let points = f32(out) * f32(ax.n);
        if (points <= 1.0) { return as_written(ax.start + as_written(ax.bin * 0.5)); }
        let k = as_written(f32(o) * f32(ax.n)) + f32(i);
        return as_written(ax.start + as_written(k * as_written(ax.bin / (points - 1.0))));
    }
    let offset = bitcast<f32>(params.out_offset);
    let within = as_written(as_written((f32(i) - offset) * ax.bin) / f32(ax.n));
    return as_written(as_written(ax.start + as_written(f32(o) * ax.bin)) + within);
}

fn sample_inside(v: f32, size: u32) -> bool { return v >= -1.0 && v <= f32(size); }

// A coordinate inside [-1, size] as bilinear interpolation reads it: the lower and upper
// element and the upper one's weight (ONNX Runtime's and torchvision's clamping).
struct Lerp { low: u32, high: u32, frac: f32 }
fn lerp_of(v: f32, size: u32) -> Lerp {
    var c = max(v, 0.0);
    var low = u32(c);
    if (low >= size - 1u) {
        low = size - 1u;
        return Lerp(low, low, 0.0);
    }
    return Lerp(low, low + 1u, c - f32(low));
}

// The bilinear weights of a sample's corners: low-low, low-high, high-low, high-high (y, x).
fn corner_weights(ly: Lerp, lx: Lerp) -> vec4<f32> {
    let hy = 1.0 - ly.frac;
    let hx = 1.0 - lx.frac;
    return vec4<f32>(hy * hx, hy * lx.frac, ly.frac * hx, ly.frac * lx.frac);
}

// The element nearest to a coordinate inside [-1, size] (halves to the lower one).
fn nearest_of(l: Lerp) -> u32 { return select(l.low, l.high, l.frac > 0.5); }

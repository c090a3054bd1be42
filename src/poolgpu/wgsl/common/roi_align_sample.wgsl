// ROI align's samples (roi_align.wgsl and its gradients): the value a sample reads.
//
// Reads the Params fields x_h and x_w (the input's strides) through the including kernel's
// x_load; its override constants say how samples are read and reduced.

override NEAREST: bool = false;      // the nearest element instead of bilinear interpolation
override WEIGHTED: bool = false;     // max: of the four weighted corners (ONNX Runtime's)

fn sample_value(plane: u32, ly: Lerp, lx: Lerp) -> Sampled {
    if (NEAREST) {
        let y = nearest_of(ly);
        let x = nearest_of(lx);
        let corner = select(0u, 2u, y != ly.low) + select(0u, 1u, x != lx.low);
        return Sampled(to_f32(x_load(plane + y * params.x_h + x * params.x_w)), corner);
    }
    let v1 = to_f32(x_load(plane + ly.low * params.x_h + lx.low * params.x_w));
    let v2 = to_f32(x_load(plane + ly.low * params.x_h + lx.high * params.x_w));
    let v3 = to_f32(x_load(plane + ly.high * params.x_h + lx.low * params.x_w));
    let v4 = to_f32(x_load(plane + ly.high * params.x_h + lx.high * params.x_w));
    let hy = 1.0 - ly.frac;
    let hx = 1.0 - lx.frac;
    let w1 = hy * hx;
    let w2 = hy * lx.frac;
    let w3 = ly.frac * hx;
    let w4 = ly.frac * lx.frac;
    if (REDUCE_MAX && WEIGHTED) {   // ONNX Runtime's max(max(max(a, b), c), d): ties keep the first
        var best = Sampled(w1 * v1, 0u);
        if (best.value < w2 * v2) { best = Sampled(w2 * v2, 1u); }
        if (best.value < w3 * v3) { best = Sampled(w3 * v3, 2u); }
        if (best.value < w4 * v4) { best = Sampled(w4 * v4, 3u); }
        return best;
    }
    return Sampled(as_written(as_written(as_written(w1 * v1) + as_written(w2 * v2)) + as_written(w3 * v3))
                   + as_written(w4 * v4), 0u);
}

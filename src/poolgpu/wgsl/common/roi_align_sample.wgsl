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
    let w = corner_weights(ly, lx);
    if (REDUCE_MAX && WEIGHTED) {   // ONNX Runtime's max(max(max(a, b), c), d): ties keep the first
        // (each compared through as_written: OpenGL's compiler turned `if (a < b) { a = b; }`
        // into max(a, b), which drops a NaN `a` where std::max keeps it)
        var best = Sampled(w.x * v1, 0u);
        if (best.value < as_written(w.y * v2)) { best = Sampled(w.y * v2, 1u); }
        if (best.value < as_written(w.z * v3)) { best = Sampled(w.z * v3, 2u); }
        if (best.value < as_written(w.w * v4)) { best = Sampled(w.w * v4, 3u); }
        return best;
    }
    return Sampled(as_written(as_written(as_written(w.x * v1) + as_written(w.y * v2)) + as_written(w.z * v3))
                   + as_written(w.w * v4), 0u);
}

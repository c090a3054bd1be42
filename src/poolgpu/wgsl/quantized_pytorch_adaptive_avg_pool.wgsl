// PyTorch's quantized adaptive_avg_pool2d of a contiguous input (whose output shares its scale
// and zero point), with common/quantized_accumulator.wgsl's integer sum X of each bin:
//     y = round(X * (1 / kD / kH / kW))
// kD, kH, kW the bin's sizes (adaptive bins, from the Params' sizes), round() half to even,
// every operation rounded to float32 once (the quotients and X's conversion exactly,
// common/exact_f32.wgsl).  Reads no scales or zero points.

// The length of adaptive bin o along a dimension of `size_in` inputs pooled to `size_out`
// (poolgpu's descriptions keep (size_in + 1) * size_out below 2^32).
fn bin_length(o: u32, size_in: u32, size_out: u32) -> u32 {
    return ((o + 1u) * size_in + size_out - 1u) / size_out - o * size_in / size_out;
}

fn acc_value(acc: Acc, at: Out) -> Raw {
    let d = f32_of(bin_length(at.d, params.in_d, params.out_d));
    let h = f32_of(bin_length(at.h, params.in_h, params.out_h));
    let w = f32_of(bin_length(at.w, params.in_w, params.out_w));
    return saturated(round(as_written(f32_of_i32(acc.total) * divide_rn(divide_rn(divide_rn(1.0, d), h), w))));
}

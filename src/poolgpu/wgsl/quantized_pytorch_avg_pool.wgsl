// PyTorch's quantized avg_pool2d (its CPU kernels), with common/quantized_accumulator.wgsl's
// integer sum, count n and divisor d:
//     A = sum of x - x_zero * n (32-bit, wrapping);  m = x_scale / y_scale / d;
//     y = round(A * m + y_zero)       (its contiguous kernel, and the rest of its channels)
//     y = round(A * m) + y_zero       (channels below VECTOR_CHANNELS: its vectorised
//                                      channels_last kernel's)
// round() half to even, every operation rounded to float32 once (the quotients and A's
// conversion exactly, common/exact_f32.wgsl), saturated to the output type.

override VECTOR_CHANNELS: u32 = 0u;

fn acc_value(acc: Acc, at: Out) -> Raw {
    let a = f32_of_i32(acc.total - acc.zero * i32(acc.count));
    let m = divide_rn(divide_rn(acc.scale, output_scale(at.c)), divisor(acc, at));
    let p = as_written(a * m);
    let zero = f32(output_zero(at.c));
    if (at.c < VECTOR_CHANNELS) { return saturated(round(p) + zero); }
    return saturated(round(as_written(p + zero)));
}

// ONNX Runtime's global average of quantized values (MLAS, for QLinearGlobalAveragePool and
// QLinearAveragePool windows covering whole planes without padding), with
// common/quantized_accumulator.wgsl's integer sum and count n:
//     A = sum of x - x_zero * n (32-bit, wrapping);  m = x_scale / (y_scale * n);
//     y = round(A * m) + y_zero
// round() half to even, every operation rounded to float32 once (the quotient and A's
// conversion exactly, common/exact_f32.wgsl), saturated to the output type.

fn acc_value(acc: Acc, at: Out) -> Raw {
    let a = f32_of_i32(acc.total - acc.zero * i32(acc.count));
    let m = divide_rn(acc.scale, as_written(output_scale(at.c) * f32_of(acc.count)));
    return saturated(round(as_written(a * m)) + f32(output_zero(at.c)));
}

// Quantized average pooling: DirectML QUANTIZED_LINEAR_AVERAGE_POOLING, and ONNX Runtime's
// QLinearAveragePool (ZERO_POINT_FIRST), with common/quantized_accumulator.wgsl's float32
// sum S of each window's dequantized taps and its divisor d:
//     DirectML:      y = round(S / d / y_scale) + y_zero
//     ONNX Runtime:  y = round(S / d / y_scale + y_zero)
// round() half to even, every operation rounded to float32 once (the quotients exactly,
// common/exact_f32.wgsl), saturated to the output type.

override ZERO_POINT_FIRST: bool = false;

fn acc_value(acc: Acc, at: Out) -> Raw {
    let scaled = divide_rn(divide_rn(acc.sum, divisor(acc, at)), output_scale(at.c));
    let zero = f32(output_zero(at.c));
    if (ZERO_POINT_FIRST) { return saturated(round(as_written(scaled + zero))); }
    return saturated(round(scaled) + zero);
}

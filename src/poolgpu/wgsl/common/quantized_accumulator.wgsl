// The accumulator of quantized average pooling, of int8 or uint8 values, shared by the
// operator files that finish it (acc_value), one per arithmetic (poolgpu.kernels.quantized;
// docs/semantics.md writes each out): quantized_avg_pool.wgsl (DirectML's and ONNX Runtime's
// float32 rules), quantized_global_avg_pool.wgsl (ONNX Runtime's global average),
// quantized_pytorch_avg_pool.wgsl and quantized_pytorch_adaptive_avg_pool.wgsl (PyTorch's).
// It walks with the window walks (common/window_geometry.wgsl) and the bins walk.
//
// Each tap adds its value to an integer sum (wrapping, as the 32-bit sums of ONNX Runtime and
// PyTorch do) and, for the float32 rules (FLOAT_SUM), its dequantized value
// (x - x_zero) * x_scale to a float32 sum, in the window's order, each operation rounded once
// as written (common/as_written.wgsl keeps drivers from fusing or reordering them).  Scales
// and zero points are read at the output's channel times XS_C, XZ_C, YS_C, YZ_C (0: per
// tensor; the general walk reads them per output, acc_for, the others once, acc_new); an
// absent zero point reads as 0.

override FLOAT_SUM: bool = false;
override XS_C: u32 = 0u;  override XZ_C: u32 = 0u;  override YS_C: u32 = 0u;  override YZ_C: u32 = 0u;
override Q_MIN: i32 = -128;  override Q_MAX: i32 = 127;   // the output type's range

fn input_scale(c: u32) -> f32 { return bitcast<f32>(xs_load(params.xs_base + c * XS_C)); }
fn input_zero(c: u32) -> i32 { return key_of(xz_load(params.xz_base + c * XZ_C)); }
fn output_scale(c: u32) -> f32 { return bitcast<f32>(ys_load(params.ys_base + c * YS_C)); }
fn output_zero(c: u32) -> i32 { return key_of(yz_load(params.yz_base + c * YZ_C)); }

alias Tap = i32;
fn tap_of(raw: Raw) -> Tap { return key_of(raw); }

// sum: the float32 sum; total: the integer sum of x; count: the input elements covered;
// scale, zero: the input's, for the taps.
struct Acc { sum: f32, total: i32, count: u32, scale: f32, zero: i32 }

fn acc_new() -> Acc { return Acc(0.0, 0, 0u, input_scale(0u), input_zero(0u)); }

// The accumulator of output `at`'s window before its first tap (the general walk's).
fn acc_for(at: Out) -> Acc { return Acc(0.0, 0, 0u, input_scale(at.c), input_zero(at.c)); }

fn acc_add(acc: Acc, t: Tap, index: u32, inside: bool) -> Acc {
    var a = acc;
    if (FLOAT_SUM) {
        let term = as_written(a.scale * f32(t - a.zero));
        a.sum = as_written(a.sum + select(0.0, term, inside));
    }
    a.total += select(0, t, inside);
    a.count += u32(inside);
    return a;
}

// The accumulator of two disjoint sets of taps, the first's before the second's (the integer
// rules only: their sums do not depend on the order).  The scale and zero point are the
// second's: a merge pass starts from acc_new() (channel 0's) and merges parts that read
// their channel's.
fn acc_merge(a: Acc, b: Acc) -> Acc {
    return Acc(a.sum + b.sum, a.total + b.total, a.count + b.count, b.scale, b.zero);
}

// The average's divisor: divisor_override, the window's element count with padding (as
// common/average_divisor.wgsl counts it), or the input elements it covers.
fn divisor(acc: Acc, at: Out) -> f32 {
    if (DIVISOR_OVERRIDE != 0u) { return f32_of(DIVISOR_OVERRIDE); }
    if (!INCLUDE_PADDING) { return f32_of(acc.count); }
    let d = divisor_taps(at.d, KD, SD, LD, PD, params.in_d, ED);
    let h = divisor_taps(at.h, KH, SH, LH, PH, params.in_h, EH);
    let w = divisor_taps(at.w, KW, SW, LW, PW, params.in_w, EW);
    if (WIDE_DIVISOR) { return as_written(as_written(f32_of(d) * f32_of(h)) * f32_of(w)); }
    return f32_of(d * h * w);
}

// v (a whole number, or an infinity) saturated to the output type, as its raw bits; NaN
// (only from scales whose products overflow float32) as the type's least value, as ONNX
// Runtime's x86 build gives.
fn saturated(v: f32) -> Raw {
    let nan = (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
    let q = select(i32(clamp(v, f32(Q_MIN), f32(Q_MAX))), Q_MIN, nan);
    return bitcast<u32>(q) & 0xffu;
}

fn acc_index(acc: Acc) -> u32 { return 0u; }

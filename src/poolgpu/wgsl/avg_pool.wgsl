// Average pooling: DirectML AVERAGE_POOLING and AVERAGE_POOLING1 (dilations).
// The accumulator of the window walks (common/window_geometry.wgsl): a compensated f32 sum
// of the window's input elements (common/compensated_sum.wgsl), divided by the number of
// input elements the window covers, or with INCLUDE_PADDING by its element count, or by
// DIVISOR_OVERRIDE (the constants: common/average_divisor_constants.wgsl).

alias Tap = f32;
fn tap_of(raw: Raw) -> Tap { return to_f32(raw); }

struct Acc { sum: CompensatedSum, count: u32 }

fn acc_new() -> Acc {
    return Acc(CompensatedSum(0.0, 0.0), 0u);
}
// The accumulator of output `at`'s window before its first tap (the general walk's).
fn acc_for(at: Out) -> Acc { return acc_new(); }

fn acc_add(acc: Acc, t: Tap, index: u32, inside: bool) -> Acc {
    return Acc(compensated_add(acc.sum, select(0.0, t, inside)), acc.count + u32(inside));
}

// The accumulator of two disjoint sets of taps (the plane walk's merge).
fn acc_merge(a: Acc, b: Acc) -> Acc {
    let sum = compensated_add(a.sum, b.sum.sum);
    return Acc(CompensatedSum(sum.sum, sum.error + b.sum.error), a.count + b.count);
}

// Taps of output o's window along a dimension that fall in [-pad_start, size + pad_end).
fn taps_within(o: u32, stride: u32, taps: u32, dilation: u32, pad_start: u32, size: u32, pad_end: u32) -> u32 {
    let within = taps_inside(i32(o * stride), taps, dilation, size + pad_start + pad_end);
    return within.end - within.first;
}

// The element count of output `at`'s window, padding counted: exact in u32, or past
// 2^32 - 1 (WIDE_DIVISOR) a product in f32, within an ulp.
fn padded_divisor(at: Out) -> f32 {
    var counts = vec3<u32>(KD, KH, KW);
    if (CLIP_DIVISOR) {
        counts = vec3<u32>(taps_within(at.d, SD, KD, LD, PD, params.in_d, ED), taps_within(at.h, SH, KH, LH, PH, params.in_h, EH),
                           taps_within(at.w, SW, KW, LW, PW, params.in_w, EW));
    }
    if (WIDE_DIVISOR) { return as_written(f32(counts.x) * f32(counts.y)) * f32(counts.z); }
    return f32(counts.x * counts.y * counts.z);
}

fn acc_value(acc: Acc, at: Out) -> Raw {
    var divisor = f32(acc.count);
    if (INCLUDE_PADDING) { divisor = padded_divisor(at); }
    if (DIVISOR_OVERRIDE != 0u) { divisor = f32(DIVISOR_OVERRIDE); }
    return from_f32(compensated_total(acc.sum) / divisor);
}

fn acc_index(acc: Acc) -> u32 { return 0u; }

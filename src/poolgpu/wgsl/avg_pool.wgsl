// Average pooling: DirectML AVERAGE_POOLING and AVERAGE_POOLING1 (dilations).
// The accumulator of common/window_walk.wgsl: a compensated (Neumaier) f32 sum of the
// window's input elements, divided by the window's element count (INCLUDE_PADDING) or by
// the number of input elements it covers.  Tensors: x (x_load), y (y_store).

override INCLUDE_PADDING: bool = false;

struct Acc { sum: CompensatedSum, count: u32 }

fn acc_new() -> Acc {
    return Acc(CompensatedSum(0.0, 0.0), 0u);
}

fn acc_add(acc: ptr<function, Acc>, raw: Raw, index: u32, inside: bool) {
    (*acc).sum = compensated_add((*acc).sum, select(0.0, to_f32(raw), inside));
    (*acc).count += u32(inside);
}

fn acc_store(acc: Acc, at: Out) {
    let divisor = select(f32(acc.count), f32(KD * KH * KW), INCLUDE_PADDING);
    y_store(y_offset(at), from_f32(compensated_total(acc.sum) / divisor));
}

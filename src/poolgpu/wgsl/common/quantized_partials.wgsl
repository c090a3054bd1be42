// The quantized average's accumulator (common/quantized_accumulator.wgsl) as ACC_WORDS words of a
// partial result (see max_partials.wgsl): the float32 sum's bits, the integer sum, the count,
// and the input's scale and zero point (a chained walk continues with them).
const ACC_WORDS: u32 = 5u;

fn acc_save(e: u32, acc: Acc) {
    save_word(e, bitcast<u32>(acc.sum));
    save_word(e + 1u, bitcast<u32>(acc.total));
    save_word(e + 2u, acc.count);
    save_word(e + 3u, bitcast<u32>(acc.scale));
    save_word(e + 4u, bitcast<u32>(acc.zero));
}

fn acc_load(e: u32) -> Acc {
    return Acc(bitcast<f32>(load_word(e)), bitcast<i32>(load_word(e + 1u)), load_word(e + 2u),
               bitcast<f32>(load_word(e + 3u)), bitcast<i32>(load_word(e + 4u)));
}

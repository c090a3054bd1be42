// Lp pooling's accumulator (lp_pool.wgsl) as ACC_WORDS words of a partial result (see
// max_partials.wgsl): the scaled compensated sum's two floats' bits and its exponent (the
// scale 2^-exponent follows from it).
const ACC_WORDS: u32 = 3u;

fn acc_save(e: u32, acc: Acc) {
    save_word(e, bitcast<u32>(acc.sum.sum));
    save_word(e + 1u, bitcast<u32>(acc.sum.error));
    save_word(e + 2u, bitcast<u32>(acc.exponent));
}

fn acc_load(e: u32) -> Acc {
    let exponent = bitcast<i32>(load_word(e + 2u));
    let scale = select(1.0, power_of_two(-exponent), SCALED);
    return Acc(CompensatedSum(bitcast<f32>(load_word(e)), bitcast<f32>(load_word(e + 1u))), exponent, scale);
}

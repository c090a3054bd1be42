// The average's accumulator (avg_pool.wgsl) as ACC_WORDS words of a partial result (see
// max_partials.wgsl): the compensated sum's two floats' bits and the count of input elements.
const ACC_WORDS: u32 = 3u;

fn acc_save(e: u32, acc: Acc) {
    save_word(e, bitcast<u32>(acc.sum.sum));
    save_word(e + 1u, bitcast<u32>(acc.sum.error));
    save_word(e + 2u, acc.count);
}

fn acc_load(e: u32) -> Acc {
    return Acc(CompensatedSum(bitcast<f32>(load_word(e)), bitcast<f32>(load_word(e + 1u))), load_word(e + 2u));
}

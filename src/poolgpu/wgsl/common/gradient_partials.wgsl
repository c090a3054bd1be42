// A split gather's partial sum as ACC_WORDS words (see max_partials.wgsl): its f32 bits.
const ACC_WORDS: u32 = 1u;
fn acc_save(e: u32, acc: Acc) { save_word(e, bitcast<u32>(acc.sum)); }
fn acc_load(e: u32) -> Acc { return Acc(bitcast<f32>(load_word(e))); }

// The max accumulator (max_accumulator.wgsl) as ACC_WORDS words of a partial result: a split
// walk saves one per part of a window (acc_save), the merge pass (window_walk_merge.wgsl)
// loads and merges them (acc_load, acc_merge).  The walk says where words go: save_word(e, v)
// and load_word(e).  Words: the winner's raw bits (two words), its flat index, whether the
// part held an input element.
const ACC_WORDS: u32 = 4u;

fn acc_save(e: u32, acc: Acc) {
    let raw = raw_words(acc.raw);
    save_word(e, raw.x);
    save_word(e + 1u, raw.y);
    save_word(e + 2u, acc.index);
    save_word(e + 3u, u32(acc.found));
}

fn acc_load(e: u32) -> Acc {
    let raw = raw_of_words(vec2<u32>(load_word(e), load_word(e + 1u)));
    let found = load_word(e + 3u) != 0u;
    return Acc(select(KEY_FLOOR, key_of(raw), found), raw, load_word(e + 2u), found);
}

// Tensor `$name`, read four 8-bit elements at a time (one word; e a multiple of 4), each
// zero-extended.
@group(0) @binding($binding) var<storage, $access> ${name}_words: array<u32>;
fn ${name}_load4(e: u32) -> array<Raw, 4> {
    let w = ${name}_words[e >> 2u];
    return array<Raw, 4>(w & 0xffu, (w >> 8u) & 0xffu, (w >> 16u) & 0xffu, w >> 24u);
}

// Tensor `$name`, read four 8-bit elements at a time (one word; e a multiple of 4), each
// zero-extended.
@group(0) @binding($binding) var<storage, $access> ${name}_words: array<u32>;
fn ${name}_load4(e: u32) -> array<Raw, 4> {
    let w = ${name}_words[e >> 2u];
    return array<Raw, 4>(w & 0xffu, (w >> 8u) & 0xffu, (w >> 16u) & 0xffu, w >> 24u);
}
// Eight elements (e a multiple of 8): two of the loads above (only 16-bit types load
// eight at once; window_walk_rows.wgsl's PAIRED).
fn ${name}_load8(e: u32) -> array<Raw, 8> {
    let a = ${name}_load4(e);
    let b = ${name}_load4(e + 4u);
    return array<Raw, 8>(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]);
}

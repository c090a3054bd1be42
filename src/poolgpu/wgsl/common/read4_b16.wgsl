// Tensor `$name`, read four 16-bit elements at a time (one 8-byte load; e a multiple of 4),
// each zero-extended.
@group(0) @binding($binding) var<storage, $access> ${name}_pairs: array<vec2<u32>>;
fn ${name}_load4(e: u32) -> array<Raw, 4> {
    let p = ${name}_pairs[e >> 2u];
    return array<Raw, 4>(p.x & 0xffffu, p.x >> 16u, p.y & 0xffffu, p.y >> 16u);
}

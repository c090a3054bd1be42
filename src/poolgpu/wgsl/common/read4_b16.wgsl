// Tensor `$name`, read four 16-bit elements at a time (e a multiple of 4), or eight (one
// 16-byte load; e a multiple of 8), each zero-extended.
@group(0) @binding($binding) var<storage, $access> ${name}_octets: array<vec4<u32>>;
fn ${name}_load4(e: u32) -> array<Raw, 4> {
    let q = ${name}_octets[e >> 3u];
    let p = select(q.xy, q.zw, (e & 4u) != 0u);
    return array<Raw, 4>(p.x & 0xffffu, p.x >> 16u, p.y & 0xffffu, p.y >> 16u);
}
fn ${name}_load8(e: u32) -> array<Raw, 8> {
    let q = ${name}_octets[e >> 3u];
    return array<Raw, 8>(q.x & 0xffffu, q.x >> 16u, q.y & 0xffffu, q.y >> 16u,
                         q.z & 0xffffu, q.z >> 16u, q.w & 0xffffu, q.w >> 16u);
}

// Tensor `$name`, read four 32-bit elements at a time (one 16-byte load; e a multiple of 4).
@group(0) @binding($binding) var<storage, $access> ${name}_quads: array<vec4<u32>>;
fn ${name}_load4(e: u32) -> array<Raw, 4> {
    let q = ${name}_quads[e >> 2u];
    return array<Raw, 4>(q.x, q.y, q.z, q.w);
}

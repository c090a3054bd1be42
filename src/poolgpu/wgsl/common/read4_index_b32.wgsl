// Index tensor `$name` (UINT32), read four indices at a time (one 16-byte load; e a
// multiple of 4) as (low, high) word pairs, the high word 0.
@group(0) @binding($binding) var<storage, $access> ${name}_quads: array<vec4<u32>>;
fn ${name}_load4_index(e: u32) -> array<vec2<u32>, 4> {
    let q = ${name}_quads[e >> 2u];
    return array<vec2<u32>, 4>(vec2<u32>(q.x, 0u), vec2<u32>(q.y, 0u), vec2<u32>(q.z, 0u), vec2<u32>(q.w, 0u));
}

// Index tensor `$name` (UINT64), read four indices at a time (two 16-byte loads; e a
// multiple of 4) as (low, high) word pairs.
@group(0) @binding($binding) var<storage, $access> ${name}_quads: array<vec4<u32>>;
fn ${name}_load4_index(e: u32) -> array<vec2<u32>, 4> {
    let a = ${name}_quads[e >> 1u];
    let b = ${name}_quads[(e >> 1u) + 1u];
    return array<vec2<u32>, 4>(a.xy, a.zw, b.xy, b.zw);
}

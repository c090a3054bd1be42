// Tensor `$name`, read four 64-bit elements at a time (two 16-byte loads; e a multiple of 4).
@group(0) @binding($binding) var<storage, $access> ${name}_quads: array<vec4<u32>>;
fn ${name}_load4(e: u32) -> array<Raw, 4> {
    let a = ${name}_quads[e >> 1u];
    let b = ${name}_quads[(e >> 1u) + 1u];
    return array<Raw, 4>(a.xy, a.zw, b.xy, b.zw);
}

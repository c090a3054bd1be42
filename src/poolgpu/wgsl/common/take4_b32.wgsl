// Scratch words `$name` read and reset four at a time (see take_b32.wgsl; e a multiple of 4).
@group(0) @binding($binding) var<storage, read_write> ${name}_quads: array<vec4<u32>>;
fn ${name}_take4(e: u32) -> vec4<u32> {
    let v = ${name}_quads[e >> 2u];
    ${name}_quads[e >> 2u] = vec4<u32>(0u);
    return v;
}

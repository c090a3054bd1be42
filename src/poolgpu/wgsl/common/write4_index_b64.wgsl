// Index tensor `$name` (UINT64), written four indices at a time (two 16-byte stores; e a
// multiple of 4); an index is below 2^32, so its high word is 0.
@group(0) @binding($binding) var<storage, read_write> ${name}_quads: array<vec4<u32>>;
fn ${name}_store4_index(e: u32, i: array<u32, 4>) {
    ${name}_quads[e >> 1u] = vec4<u32>(i[0], 0u, i[1], 0u);
    ${name}_quads[(e >> 1u) + 1u] = vec4<u32>(i[2], 0u, i[3], 0u);
}

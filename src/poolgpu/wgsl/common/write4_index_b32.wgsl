// Index tensor `$name` (UINT32), written four indices at a time (one 16-byte store; e a
// multiple of 4).
@group(0) @binding($binding) var<storage, read_write> ${name}_quads: array<vec4<u32>>;
fn ${name}_store4_index(e: u32, i: array<u32, 4>) { ${name}_quads[e >> 2u] = vec4<u32>(i[0], i[1], i[2], i[3]); }

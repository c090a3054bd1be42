// Tensor `$name`, written four 64-bit elements at a time (two 16-byte stores; e a multiple of 4).
@group(0) @binding($binding) var<storage, read_write> ${name}_quads: array<vec4<u32>>;
fn ${name}_store4(e: u32, v: array<Raw, 4>) {
    ${name}_quads[e >> 1u] = vec4<u32>(v[0], v[1]);
    ${name}_quads[(e >> 1u) + 1u] = vec4<u32>(v[2], v[3]);
}

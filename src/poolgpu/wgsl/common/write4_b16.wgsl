// Tensor `$name`, written four 16-bit elements at a time (one 8-byte store; e a multiple of 4).
@group(0) @binding($binding) var<storage, read_write> ${name}_pairs: array<vec2<u32>>;
fn ${name}_store4(e: u32, v: array<Raw, 4>) {
    ${name}_pairs[e >> 2u] = vec2<u32>((v[0] & 0xffffu) | (v[1] << 16u), (v[2] & 0xffffu) | (v[3] << 16u));
}

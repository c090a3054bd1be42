// Tensor `$name`, written eight 16-bit elements at a time (one 16-byte store; e a multiple of 8).
@group(0) @binding($binding) var<storage, read_write> ${name}_octets: array<vec4<u32>>;
fn ${name}_store8(e: u32, v: array<Raw, 8>) {
    ${name}_octets[e >> 3u] = vec4<u32>((v[0] & 0xffffu) | (v[1] << 16u), (v[2] & 0xffffu) | (v[3] << 16u),
                                        (v[4] & 0xffffu) | (v[5] << 16u), (v[6] & 0xffffu) | (v[7] << 16u));
}

// Tensor `$name`, written four 8-bit elements at a time (one word; e a multiple of 4).
@group(0) @binding($binding) var<storage, read_write> ${name}_words: array<u32>;
fn ${name}_store4(e: u32, v: array<Raw, 4>) {
    ${name}_words[e >> 2u] = (v[0] & 0xffu) | ((v[1] & 0xffu) << 8u) | ((v[2] & 0xffu) << 16u) | (v[3] << 24u);
}

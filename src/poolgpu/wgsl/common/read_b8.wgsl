// Tensor `$name`, read: four 8-bit elements per word, little-endian; the value is zero-extended.
@group(0) @binding($binding) var<storage, $access> ${name}_words: array<u32>;
fn ${name}_load(e: u32) -> u32 { return (${name}_words[e >> 2u] >> ((e & 3u) << 3u)) & 0xffu; }

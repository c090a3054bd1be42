// Tensor `$name`, written: one 32-bit element per word.
@group(0) @binding($binding) var<storage, read_write> ${name}_words: array<u32>;
fn ${name}_store(e: u32, v: u32) { ${name}_words[e] = v; }
fn ${name}_store_index(e: u32, i: u32) { ${name}_words[e] = i; }

// Tensor `$name`, written: one 32-bit element per word.
@group(0) @binding($binding) var<storage, read_write> ${name}_words: array<u32>;
fn ${name}_store(e: u32, v: u32) { ${name}_words[e] = v; }
fn ${name}_store_over_zero(e: u32, v: u32) { ${name}_words[e] = v; }   // (write_b16.wgsl's)
fn ${name}_store_index(e: u32, i: u32) { ${name}_words[e] = i; }
fn ${name}_store_pair(e: u32, v0: u32, v1: u32) { ${name}_words[e] = v0; ${name}_words[e + 1u] = v1; }

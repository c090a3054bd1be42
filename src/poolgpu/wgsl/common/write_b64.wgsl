// Tensor `$name`, written: one 64-bit element in two words, (low, high).
@group(0) @binding($binding) var<storage, read_write> ${name}_words: array<u32>;
fn ${name}_store(e: u32, v: vec2<u32>) { ${name}_words[2u * e] = v.x; ${name}_words[2u * e + 1u] = v.y; }
fn ${name}_store_over_zero(e: u32, v: vec2<u32>) { ${name}_store(e, v); }   // (write_b16.wgsl's)
fn ${name}_store_index(e: u32, i: u32) { ${name}_words[2u * e] = i; ${name}_words[2u * e + 1u] = 0u; }
fn ${name}_store_pair(e: u32, v0: vec2<u32>, v1: vec2<u32>) { ${name}_store(e, v0); ${name}_store(e + 1u, v1); }

// Tensor `$name`, read: one 64-bit element in two words, (low, high).
@group(0) @binding($binding) var<storage, $access> ${name}_words: array<u32>;
fn ${name}_load(e: u32) -> vec2<u32> { return vec2<u32>(${name}_words[2u * e], ${name}_words[2u * e + 1u]); }

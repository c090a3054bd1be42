// Tensor `$name`, read: one 32-bit element per word.
@group(0) @binding($binding) var<storage, $access> ${name}_words: array<u32>;
fn ${name}_load(e: u32) -> u32 { return ${name}_words[e]; }

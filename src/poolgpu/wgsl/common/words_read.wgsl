// Tensor `$name`, 32-bit words read (a split walk's partial results, common/*_partials.wgsl).
@group(0) @binding($binding) var<storage, $access> ${name}_words: array<u32>;
fn ${name}_word(e: u32) -> u32 { return ${name}_words[e]; }

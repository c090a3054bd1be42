// Tensor `$name`, 32-bit words written (a split walk's partial results, common/*_partials.wgsl).
@group(0) @binding($binding) var<storage, read_write> ${name}_words: array<u32>;
fn ${name}_word_store(e: u32, v: u32) { ${name}_words[e] = v; }
fn ${name}_word(e: u32) -> u32 { return ${name}_words[e]; }

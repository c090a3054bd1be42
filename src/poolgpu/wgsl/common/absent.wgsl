// Tensor `$name` was not given (an optional output, the partial results of a walk that is
// not split, or an optional input such as a zero point): its stores compile to nothing, its
// elements read as 0.
fn ${name}_load(e: u32) -> u32 { return 0u; }
fn ${name}_store_index(e: u32, i: u32) {}
fn ${name}_store(e: u32, v: Raw) {}
fn ${name}_store4_index(e: u32, i: array<u32, 4>) {}
fn ${name}_store4(e: u32, v: array<Raw, 4>) {}
fn ${name}_store_pair(e: u32, v0: Raw, v1: Raw) {}
fn ${name}_word_store(e: u32, v: u32) {}
fn ${name}_word(e: u32) -> u32 { return 0u; }

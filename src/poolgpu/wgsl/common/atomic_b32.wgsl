// Tensor `$name`, 32-bit words updated atomically (a kernel's scratch, e.g. winner selection).
@group(0) @binding($binding) var<storage, read_write> ${name}_words: array<atomic<u32>>;
fn ${name}_max(e: u32, v: u32) { atomicMax(&${name}_words[e], v); }

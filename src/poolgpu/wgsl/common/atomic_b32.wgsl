// Tensor `$name`, 32-bit words updated atomically (a kernel's scratch, e.g. winner selection).
@group(0) @binding($binding) var<storage, read_write> ${name}_words: array<atomic<u32>>;
fn ${name}_max(e: u32, v: u32) { atomicMax(&${name}_words[e], v); }
fn ${name}_exchange(e: u32, v: u32) -> u32 { return atomicExchange(&${name}_words[e], v); }
fn ${name}_load(e: u32) -> u32 { return atomicLoad(&${name}_words[e]); }

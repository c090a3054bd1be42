// Tensor `$name`, 32-bit words updated atomically (a kernel's scratch, e.g. winner selection).
@group(0) @binding($binding) var<storage, read_write> ${name}_words: array<atomic<u32>>;
fn ${name}_max(e: u32, v: u32) { atomicMax(&${name}_words[e], v); }
// Relaxed loads and stores (plain ones on CPUs), for a later pass reading words another
// invocation may reset meanwhile (max_unpool_scatter.wgsl).
fn ${name}_load(e: u32) -> u32 { return atomicLoad(&${name}_words[e]); }
fn ${name}_clear(e: u32) { atomicStore(&${name}_words[e], 0u); }

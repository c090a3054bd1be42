// Tensor `$name`, written: four 8-bit elements per word; see write_b16.wgsl for why atomics.
@group(0) @binding($binding) var<storage, read_write> ${name}_words: array<atomic<u32>>;
fn ${name}_store(e: u32, v: u32) {
    let shift = (e & 3u) << 3u;
    atomicAnd(&${name}_words[e >> 2u], ~(0xffu << shift));
    atomicOr(&${name}_words[e >> 2u], (v & 0xffu) << shift);
}
// Element e, whose bits are zero (a tensor zero-filled before): one atomic, setting its bits.
fn ${name}_store_over_zero(e: u32, v: u32) { atomicOr(&${name}_words[e >> 2u], (v & 0xffu) << ((e & 3u) << 3u)); }
fn ${name}_store_pair(e: u32, v0: u32, v1: u32) { ${name}_store(e, v0); ${name}_store(e + 1u, v1); }

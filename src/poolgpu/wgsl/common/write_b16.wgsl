// Tensor `$name`, written: two 16-bit elements per word.  Two invocations may own the two
// halves of one word (any output strides), so each clears and sets only its own bits with
// atomics: the word ends right whatever the interleaving, and its other half is untouched.
@group(0) @binding($binding) var<storage, read_write> ${name}_words: array<atomic<u32>>;
fn ${name}_store(e: u32, v: u32) {
    let shift = (e & 1u) << 4u;
    atomicAnd(&${name}_words[e >> 1u], ~(0xffffu << shift));
    atomicOr(&${name}_words[e >> 1u], (v & 0xffffu) << shift);
}
// Element e, whose bits are zero (a tensor zero-filled before): one atomic, setting its bits.
fn ${name}_store_over_zero(e: u32, v: u32) { atomicOr(&${name}_words[e >> 1u], (v & 0xffffu) << ((e & 1u) << 4u)); }
// Elements e and e + 1 (e even: one word, wholly this invocation's): one store, no read.
fn ${name}_store_pair(e: u32, v0: u32, v1: u32) { atomicStore(&${name}_words[e >> 1u], (v0 & 0xffffu) | (v1 << 16u)); }

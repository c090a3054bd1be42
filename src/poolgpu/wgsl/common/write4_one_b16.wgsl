// Tensor `$name`, written four 16-bit elements at a time where a chunk is wholly the
// invocation's (its two words stored; e a multiple of 4), and element by element where it is
// not: another invocation may own the other half of a word, so each clears and sets only its
// own bits with atomics (as common/write_b16.wgsl), and every store to the tensor is atomic.
@group(0) @binding($binding) var<storage, read_write> ${name}_words: array<atomic<u32>>;
fn ${name}_store4(e: u32, v: array<Raw, 4>) {
    atomicStore(&${name}_words[e >> 1u], (v[0] & 0xffffu) | (v[1] << 16u));
    atomicStore(&${name}_words[(e >> 1u) + 1u], (v[2] & 0xffffu) | (v[3] << 16u));
}
fn ${name}_store(e: u32, v: u32) {
    let shift = (e & 1u) << 4u;
    atomicAnd(&${name}_words[e >> 1u], ~(0xffffu << shift));
    atomicOr(&${name}_words[e >> 1u], (v & 0xffffu) << shift);
}

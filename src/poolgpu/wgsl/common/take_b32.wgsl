// Scratch words `$name`, each owned by one invocation of this pass (written atomically by
// an earlier pass, so plain access is safe here and much cheaper than atomics on CPUs):
// take() returns a word and leaves 0 behind.
@group(0) @binding($binding) var<storage, read_write> ${name}_words: array<u32>;
fn ${name}_take(e: u32) -> u32 {
    let v = ${name}_words[e];
    ${name}_words[e] = 0u;
    return v;
}
fn ${name}_load(e: u32) -> u32 { return ${name}_words[e]; }

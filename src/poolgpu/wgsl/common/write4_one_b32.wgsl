// Tensor `$name`, written four 32-bit elements at a time where a chunk is wholly the
// invocation's (one 16-byte store; e a multiple of 4), and element by element where it is
// not (a chunk shared with a neighbouring plane's elements).
@group(0) @binding($binding) var<storage, read_write> ${name}_quads: array<vec4<u32>>;
fn ${name}_store4(e: u32, v: array<Raw, 4>) { ${name}_quads[e >> 2u] = vec4<u32>(v[0], v[1], v[2], v[3]); }
fn ${name}_store(e: u32, v: u32) { ${name}_quads[e >> 2u][e & 3u] = v; }

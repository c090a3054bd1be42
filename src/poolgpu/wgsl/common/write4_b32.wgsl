// Tensor `$name`, written four 32-bit elements at a time (one 16-byte store; e a multiple
// of 4: the four elements are one invocation's, so plain stores cannot race).  Values
// are `array<Raw, 4>`: naga tells an alias's array type apart from the aliased one.
@group(0) @binding($binding) var<storage, read_write> ${name}_quads: array<vec4<u32>>;
fn ${name}_store4(e: u32, v: array<Raw, 4>) { ${name}_quads[e >> 2u] = vec4<u32>(v[0], v[1], v[2], v[3]); }

// Tensor `$name`, written as 16-byte words (four u32 per store); the tensor must start 16-byte aligned.
@group(0) @binding($binding) var<storage, read_write> ${name}_vec4s: array<vec4<u32>>;
fn ${name}_store4(i: u32, v: vec4<u32>) { ${name}_vec4s[i] = v; }

// Tensor `$name`, read as 16-byte words (four u32 per load); the tensor must start 16-byte aligned.
@group(0) @binding($binding) var<storage, $access> ${name}_vec4s: array<vec4<u32>>;
fn ${name}_load4(i: u32) -> vec4<u32> { return ${name}_vec4s[i]; }

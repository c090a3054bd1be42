// Table `$name` (u32 words), read one word or four (one 16-byte load; e a multiple of 4).
@group(0) @binding($binding) var<storage, $access> ${name}_quads: array<vec4<u32>>;
fn ${name}_load(e: u32) -> u32 { return ${name}_quads[e >> 2u][e & 3u]; }
fn ${name}_load4(e: u32) -> vec4<u32> { return ${name}_quads[e >> 2u]; }

// Tensor `$name`, read: 32-bit integers (ROI align's batch indices) as (value, 0).
@group(0) @binding($binding) var<storage, $access> ${name}_array: array<u32>;
fn ${name}_words(e: u32) -> vec2<u32> { return vec2<u32>(${name}_array[e], 0u); }

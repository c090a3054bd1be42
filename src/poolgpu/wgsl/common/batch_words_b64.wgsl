// Tensor `$name`, read: 64-bit integers (ROI align's batch indices) as (low, high) words.
@group(0) @binding($binding) var<storage, $access> ${name}_array: array<u32>;
fn ${name}_words(e: u32) -> vec2<u32> { return vec2<u32>(${name}_array[2u * e], ${name}_array[2u * e + 1u]); }

// Floating-point values computed exactly as written.  Vulkan lets a driver reassociate float
// arithmetic and fuse a * b + c into one rounding unless SPIR-V says otherwise, which WGSL
// cannot; NVIDIA's driver does both.  That simplified compensated sums' error terms away
// (68 ulp averages) and made two kernels summing the same terms round differently.
// as_written(x) ORs x's bits with params.opaque_zero, a uniform that is always 0 (every
// Params holding it gets 0: kernels.pack_params): the compiler cannot see that this changes
// nothing, so x is kept as its own rounded value, neither fused into the next operation nor
// cancelled against the last.  The including kernel's Params holds `opaque_zero`.

fn as_written(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) | params.opaque_zero); }
fn as_written4(x: vec4<f32>) -> vec4<f32> {
    return bitcast<vec4<f32>>(bitcast<vec4<u32>>(x) | vec4<u32>(params.opaque_zero));
}
// A count as a divisor the compiler cannot fold (x / 9.0 would become x * (1 / 9.0), which
// rounds differently from a kernel dividing by a count it does not know).
fn divisor_as_written(count: u32) -> f32 { return f32(count | params.opaque_zero); }

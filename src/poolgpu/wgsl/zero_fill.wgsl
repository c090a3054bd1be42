// Writes the type's zero to every element of a dense tensor (strides a permutation of packed
// ones, so its elements are the offsets [0, count) from its first): four elements per
// store, QUADS stores per invocation; workgroup g covers the chunks [g, g + 1) * WG_X * QUADS,
// its invocations on neighbouring chunks at each step.  Max unpooling's scatter program
// clears its output this way before writing only the winners (max_unpool_scatter.wgsl).
//
// Prepended by poolgpu.kernels: the value type (Raw) and the tensor y (y_store4: e a multiple of 4).

override QUADS: u32 = 4u;

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let first = (wg.y * groups.x + wg.x) * WG_X * QUADS + lane;
    for (var k = 0u; k < QUADS; k++) {
        let quad = first + k * WG_X;
        if (quad < params.quads) { y_store4(params.y_base + 4u * quad, array<Raw, 4>()); }
    }
}

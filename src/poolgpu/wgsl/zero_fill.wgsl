// Writes the type's zero to every element of a dense tensor (strides a permutation of packed
// ones, so its elements are the offsets [0, count) from its first): four elements per
// store, QUADS stores per invocation; workgroup g covers the chunks [g, g + 1) * WG_X * QUADS,
// its invocations on neighbouring chunks at each step.  Max unpooling's scatter program
// clears its output this way before writing only the winners (max_unpool_scatter.wgsl).
//
// Prepended by kernels.py: the value type (Raw) and the tensor y (y_store4: e a multiple of 4).

override WG_X: u32 = 64u;
override QUADS: u32 = 4u;

struct Params {
    y_base: u32,
    quads: u32,    // the element count / 4 (a multiple of 4)
}
@group(0) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let first = (wg.y * groups.x + wg.x) * WG_X * QUADS + lane;
    for (var k = 0u; k < QUADS; k++) {
        let quad = first + k * WG_X;
        if (quad < params.quads) { y_store4(params.y_base + 4u * quad, array<Raw, 4>()); }
    }
}

// The bandwidth roofline of the bench (not an operator): reads every 16-byte word of `src`
// once and writes every 16-byte word of `dst` once, with as little else as possible, so its
// time is what moving an operator's bytes costs on this device.
//
// The sizes differ (a pooling reads more than it writes, its gradient the reverse), so each
// invocation XOR-folds the words it reads and stores the fold in the words it writes: every
// load feeds a store that depends on run-time sizes, so none can be optimised away, and the
// result is checkable.  Workgroup w covers the contiguous words [w, w + 1) * WG * ITEMS;
// within it, step k has its invocations on neighbouring words (coalesced on GPUs,
// contiguous vector loads on CPU adapters).
//
// Prepended by poolgpu.kernels (bench/roofline.py declares the kernel): src (src_load4) and dst (dst_store4), bound as vec4<u32> arrays.

override WG: u32 = 64u;     // invocations per workgroup
override ITEMS: u32 = 4u;   // 16-byte words per invocation (at most; fewer at the end)

// Params (binding 0): declared with bench/roofline.py, prepended as common/header.wgsl.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let first = (wg.y * groups.x + wg.x) * WG * ITEMS + lane;
    let src0 = params.src_base / 4u;
    let dst0 = params.dst_base / 4u;
    var fold = vec4<u32>(0u);
    for (var k = 0u; k < ITEMS; k++) {
        let i = first + k * WG;
        if (i < params.src_vec4s) { fold ^= src_load4(src0 + i); }
    }
    for (var k = 0u; k < ITEMS; k++) {
        let i = first + k * WG;
        if (i < params.dst_vec4s) { dst_store4(dst0 + i, fold); }
    }
}

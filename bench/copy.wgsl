// The bandwidth roofline of the bench (not an operator): reads every 16-byte word of `src`
// once and writes every 16-byte word of `dst` once, with as little else as possible, so its
// time is what moving an operator's bytes costs on this device.
//
// The sizes differ (a pooling reads more than it writes, its gradient the reverse), so each
// invocation XOR-folds the words it reads and stores the fold in the words it writes: every
// load feeds a store that depends on run-time sizes, so none can be optimised away, and the
// result is checkable.  Both tensors are cut into the same number of planes (of at most
// 16 MiB: a program too large for one storage binding runs as dispatches over runs of planes,
// bench/roofline.py); workgroup w of a plane covers the plane's contiguous words
// [w, w + 1) * WG * ITEMS, and within it step k has its invocations on neighbouring words
// (coalesced on GPUs, contiguous vector loads on CPU adapters).
//
// The steps are written out, not looped: naga bounds every loop with an iteration counter,
// which kept drivers from unrolling loops and made each load wait for the one before
// (docs/performance.md, "Windows written out").  Steps past ITEMS fold away.
//
// Prepended by poolgpu.kernels (bench/roofline.py declares the kernel): src (src_load4) and dst (dst_store4), bound as vec4<u32> arrays.

override WG: u32 = 64u;     // invocations per workgroup
override ITEMS: u32 = 4u;   // 16-byte words per invocation, 1 to 16 (fewer at a plane's end)

// Params (binding 0): declared with bench/roofline.py, prepended as common/header.wgsl.

// The word of the binding holding word `word` of the tensor whose element 0 is at `base` (u32
// elements from the binding's start, wrapping around below it in a chunked dispatch; a
// multiple of 4: planes are whole 16-byte words, bindings start at multiples of 16 bytes).
fn binding_word(base: u32, word: u32) -> u32 {
    return ((base >> 2u) + word) & 0x3fffffffu;
}

// Step k of the invocation whose first word in its plane is j (`first`: that word of the
// binding): its source word, or zero past ITEMS or the plane's end.
fn read_step(first: u32, j: u32, k: u32) -> vec4<u32> {
    if (k >= ITEMS || j + k * WG >= params.src_plane_vec4s) { return vec4<u32>(0u); }
    return src_load4(first + k * WG);
}

fn write_step(first: u32, j: u32, k: u32, fold: vec4<u32>) {
    if (k < ITEMS && j + k * WG < params.dst_plane_vec4s) { dst_store4(first + k * WG, fold); }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let q = params.first_plane + wg.z;
    let j = (wg.y * groups.x + wg.x) * WG * ITEMS + lane;
    let src = binding_word(params.src_base, q * params.src_plane_vec4s + j);
    let dst = binding_word(params.dst_base, q * params.dst_plane_vec4s + j);
    let fold = read_step(src, j, 0u) ^ read_step(src, j, 1u) ^ read_step(src, j, 2u) ^ read_step(src, j, 3u)
        ^ read_step(src, j, 4u) ^ read_step(src, j, 5u) ^ read_step(src, j, 6u) ^ read_step(src, j, 7u)
        ^ read_step(src, j, 8u) ^ read_step(src, j, 9u) ^ read_step(src, j, 10u) ^ read_step(src, j, 11u)
        ^ read_step(src, j, 12u) ^ read_step(src, j, 13u) ^ read_step(src, j, 14u) ^ read_step(src, j, 15u);
    write_step(dst, j, 0u, fold);
    write_step(dst, j, 1u, fold);
    write_step(dst, j, 2u, fold);
    write_step(dst, j, 3u, fold);
    write_step(dst, j, 4u, fold);
    write_step(dst, j, 5u, fold);
    write_step(dst, j, 6u, fold);
    write_step(dst, j, 7u, fold);
    write_step(dst, j, 8u, fold);
    write_step(dst, j, 9u, fold);
    write_step(dst, j, 10u, fold);
    write_step(dst, j, 11u, fold);
    write_step(dst, j, 12u, fold);
    write_step(dst, j, 13u, fold);
    write_step(dst, j, 14u, fold);
    write_step(dst, j, 15u, fold);
}

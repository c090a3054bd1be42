// Max unpooling as a gather, pass 1 (before max_unpool_gather.wgsl, or the gradient's
// max_unpool_grad_gather.wgsl): the strays.  For each input element j (flat logical index;
// four of a row per invocation) whose index names an output element t outside j's band
// (common/unpool_band.wgsl: another plane, or outside the window j's band stands for):
// atomicMax(winner[t], j + 1), so the largest such j is kept whatever order invocations run
// in, and flags[t's (n, c) plane] = 1, so the gather reads the winners of that plane only.
// Indices outside the output count nowhere.  Indices written by max pooling hold no strays:
// this pass then only reads the indices.
//
// Prepended by poolgpu.kernels: the tensors idx, winner (winner_max) and flags (flags_max);
// appended: grid.wgsl, unpool_source.wgsl and unpool_indices1.wgsl or unpool_indices4.wgsl
// (the input elements and their indices), divide.wgsl, output_coordinates.wgsl and
// unpool_band.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

// Element k of the run (k constant: see unpool_source.wgsl's run_index).
fn stray(r: UnpoolRow, k: u32) {
    let s = unpool_source(r, k);
    if (!s.counts) { return; }
    let at = output_coordinates(s.dest);
    if (at.n == s.n && at.c == s.c && in_band(at.d, at.h, at.w, s.d, s.h, s.w)) { return; }
    winner_max(params.winner_base + s.dest, s.j + 1u);
    flags_max(params.flags_base + at.n * params.channels + at.c, 1u);
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let r = unpool_row(wg, lid);
    stray(r, 0u);
    stray(r, 1u);
    stray(r, 2u);
    stray(r, 3u);
}

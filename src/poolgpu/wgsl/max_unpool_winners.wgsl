// Max unpooling (DirectML MAX_UNPOOLING): pick each output element's winner, before
// max_unpool.wgsl (every output element copies its winner) or max_unpool_scatter.wgsl
// (dense outputs: every winner copies itself).
//
// For each input element j (flat logical index; four of a row per invocation): if
// indices[j] lies inside the output, atomicMax(winner[slot], j + 1) at the output element's
// slot (common/unpool_slots.wgsl: its flat logical index, or its offset in y), so the largest j
// wins wherever indices repeat, whatever order invocations run in.  0 means "no j": the
// output element gets the type's zero.
// For outputs larger than a binding (kernels.chunked) each chunk of output elements
// [out_first, out_first + out_count) gets its winners from every input element in turn.
//
// Prepended by poolgpu.kernels: the tensors idx and winner (winner_max; one word per output
// element); appended: grid.wgsl, unpool_source.wgsl (the input elements and their indices),
// unpool_indices1.wgsl or unpool_indices4.wgsl (reading idx), divide.wgsl,
// output_coordinates.wgsl and unpool_slots.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

// Element k of the run (k constant: see unpool_source.wgsl's run_index).
fn pick(r: UnpoolRow, k: u32) {
    let s = unpool_source(r, k);
    // (winner_base is the winner of output element 0: below the binding in a chunk)
    if (s.counts) { winner_max(params.winner_base + winner_slot(s), s.j + 1u); }
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let r = unpool_row(wg, lid);   // the invocation's run of a row: its elements one by one
    pick(r, 0u);
    pick(r, 1u);
    pick(r, 2u);
    pick(r, 3u);
}

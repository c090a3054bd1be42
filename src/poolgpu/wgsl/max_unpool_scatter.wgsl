// Max unpooling (DirectML MAX_UNPOOLING) over a dense output, last of three passes: after
// zero_fill.wgsl has written the type's zero everywhere and max_unpool_winners.wgsl has
// picked each output element's winner, every input element j that won its output element
// copies its raw bits there and resets the winner to 0 (the scratch is clean for the next
// call).  The pass walks the input's elements (four per invocation), not the output's: on
// case A (3x3 stride 2) a quarter as many, and no read of the whole scratch.
//
// Only the winner resets its word; another invocation reading it meanwhile sees j' + 1 or
// 0, neither its own, so it writes nothing whatever the order.  The words are atomics for
// that reason (relaxed loads and stores: plain ones on CPUs).
//
// The winners' slots are the output elements' offsets in y where y is not packed
// (common/unpool_slots.wgsl's SLOTS_AT_OFFSETS; packed, an element's offset is its flat
// logical index), so a slot is also where the winner writes.
//
// Prepended by poolgpu.kernels: the value type (Raw) and the tensors idx, winner (winner_load,
// winner_clear), x (x_load) and y (y_store_over_zero); appended: grid.wgsl, unpool_source.wgsl,
// unpool_indices1.wgsl or unpool_indices4.wgsl (reading idx), divide.wgsl,
// output_coordinates.wgsl and unpool_slots.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

// Element k of the run (k constant: see unpool_source.wgsl's run_index).
fn copy_winner(r: UnpoolRow, k: u32) {
    let s = unpool_source(r, k);
    if (!s.counts) { return; }
    let slot = winner_slot(s);
    let e = params.winner_base + slot;
    if (winner_load(e) != s.j + 1u) { return; }
    winner_clear(e);
    // (over the fill's zeros: 8- and 16-bit elements set their bits with one atomic, not two)
    y_store_over_zero(params.y_base + slot, x_load(params.x_base + s.n * params.x_n + s.c * params.x_c
                                                   + s.d * params.x_d + s.h * params.x_h + s.w * params.x_w));
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let r = unpool_row(wg, lid);
    copy_winner(r, 0u);
    copy_winner(r, 1u);
    copy_winner(r, 2u);
    copy_winner(r, 3u);
}

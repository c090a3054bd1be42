// Max unpooling's write pass, one output element per invocation (max_unpool.wgsl);
// grid: (ow, oh, (n, c, od)).  Copies only the winners of its source range (all of them
// unless the input is read in ranges).

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let pos = grid_position(wg, lid);
    if (pos.x >= params.columns) { return; }
    let od = pos.z % params.out_d;
    let nc = pos.z / params.out_d;
    // (winner_base, the winner of output element 0, lies below the binding in a chunk)
    let e = params.winner_base + flat_output(nc, od, pos.y, pos.x);
    var winner: u32;
    if (params.reset != 0u) { winner = winner_take(e); } else { winner = winner_load(e); }
    let mine = select(winner - 1u - params.source_first < params.source_count, params.zeros != 0u, winner == 0u);
    if (mine) { y_store(y_offset(nc, od, pos.y, pos.x), unpooled(winner)); }
}

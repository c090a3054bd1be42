// Max unpooling's write pass, one output element per invocation (max_unpool.wgsl);
// grid: (ow, oh, (n, c, od)).

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let pos = grid_position(wg, lid);
    if (pos.x >= params.columns) { return; }
    let od = pos.z % params.out_d;
    let nc = pos.z / params.out_d;
    let winner = winner_take(params.winner_base + flat_output(nc, od, pos.y, pos.x));
    y_store(y_offset(nc, od, pos.y, pos.x), unpooled(winner));
}

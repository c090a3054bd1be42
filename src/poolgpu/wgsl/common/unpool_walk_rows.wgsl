// Max unpooling's write pass, four neighbouring output elements along W per invocation
// (max_unpool.wgsl): the winners read and reset, and the values stored, 4 at a time.
// Requires (poolgpu.kernels checks): y contiguous along W, rows and start at multiples of 4
// elements, out_w a multiple of 4.  Grid: (ow / 4, oh, (n, c, od)).

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let pos = grid_position(wg, lid);
    if (pos.x >= params.columns) { return; }
    let ow0 = 4u * pos.x;
    let od = pos.z % params.out_d;
    let nc = pos.z / params.out_d;
    let w = winner_take4(params.winner_base + flat_output(nc, od, pos.y, ow0));
    y_store4(y_offset(nc, od, pos.y, ow0), array<Raw, 4>(unpooled(w[0]), unpooled(w[1]), unpooled(w[2]), unpooled(w[3])));
}

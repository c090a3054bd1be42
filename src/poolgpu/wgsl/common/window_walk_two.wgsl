// The general walk's entry point for two neighbouring outputs along W per invocation
// (OUTPUTS 2: common/window_walk.wgsl), whole windows; a row's last output alone.  (Windows
// are walked at two places: see window_walk_one.wgsl.)
@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let pos = grid_position(wg, lid);
    if (pos.x >= params.columns) { return; }
    let w = walked(pos);
    let acc = window_from(acc_for(w.at), w.at, 0u, w.x_plane, w.logical_plane);
    if (w.next.w >= params.out_w) {
        store_one(w.at, acc);
        return;
    }
    store_two(w.at, acc, w.next, window_from(acc_for(w.next), w.next, 0u, w.x_plane, w.logical_plane));
}

// The general walk's entry point for one output per invocation (OUTPUTS 1: common/window_walk.wgsl),
// whole windows or parts of them (PARTS, CHAINED).
//
// Each entry point walks windows at as few places in its code as it can (here one): window_from
// holds up to 4 x 4 x 4 taps written out, and compilers inline every call before the branches
// on override constants fold away (lavapipe took 1.5-2.5 s to build a pipeline whose one
// entry point walked windows at five places and held the pairs' walk too; 0.13-0.16 s since,
// max pooling on an idle machine).
@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let pos = grid_position(wg, lid);
    if (pos.x >= params.columns) { return; }
    let w = walked(pos);
    // (CHAINED: one saved accumulator per output, continued part after part)
    let saved = params.part_base + select(w.output * PARTS + w.part, w.output, CHAINED) * ACC_WORDS;
    var acc = acc_for(w.at);
    if (CHAINED && w.part > 0u) { acc = acc_load(saved); }
    acc = window_from(acc, w.at, w.part, w.x_plane, w.logical_plane);
    if (PARTS > 1u && !(CHAINED && w.part + 1u == PARTS)) {
        acc_save(saved, acc);
    } else {
        store_one(w.at, acc);
    }
}

// The merge pass of a split walk (window_walk.wgsl, window_walk_reduce.wgsl,
// window_walk_bins.wgsl): the parts of each output's window were walked by several
// invocations, each saving its accumulator into tensor `part` (ACC_WORDS words per part,
// PARTS parts per output, outputs numbered flat over {N, C, out_d, out_h, out_w}).  Here one
// invocation merges GROUP consecutive parts of an output in increasing order (acc_merge: the
// first maximum's index wins, sums add with compensation in a fixed order: the same bits run
// after run) and stores the output, or, where parts are more than one invocation may merge
// (FINAL false), saves the group's accumulator for another merge pass (into `merged`,
// numbered likewise with ceil(PARTS / GROUP) parts per output).
//
// Grid (common/grid.wgsl): (ow, oh, ((n, c, od), group)).

override PARTS: u32 = 1u;
override GROUP: u32 = 1u;
override FINAL: bool = true;

// acc_load reads `part`, acc_save writes `merged` (common/*_partials.wgsl).
fn load_word(e: u32) -> u32 { return part_word(e); }
fn save_word(e: u32, v: u32) { merged_word_store(e, v); }

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let pos = grid_position(wg, lid);
    if (pos.x >= params.columns) { return; }
    let groups = (PARTS + GROUP - 1u) / GROUP;
    let group = pos.z % groups;
    let plane = pos.z / groups;   // (n, c, od)
    let output = (plane * params.out_h + pos.y) * params.out_w + pos.x;
    var acc = acc_new();
    let first = group * GROUP;
    let end = min(first + GROUP, PARTS);
    for (var p = first; p < end; p++) {
        acc = acc_merge(acc, acc_load(params.part_base + (output * PARTS + p) * ACC_WORDS));
    }
    if (!FINAL) {
        acc_save(params.merged_base + (output * groups + group) * ACC_WORDS, acc);
        return;
    }
    let nc = plane / params.out_d;
    store_one(Out(nc / params.channels, nc % params.channels, plane % params.out_d, pos.y, pos.x), acc);
}

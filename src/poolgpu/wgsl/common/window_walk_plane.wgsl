// The plane walk (see window_geometry.wgsl): global pooling (one window covering each whole
// input plane, the plane contiguous in x) as a reduction by groups of PLANE_LANES lanes,
// several planes to a workgroup where planes are small (common/plane_reduce.wgsl).  Where a
// plane has more than one part, each group saves its accumulator (acc_save) and
// window_walk_merge.wgsl merges a plane's parts in order: several workgroups per plane keep a
// GPU busy where planes are few, and no lane loops longer than poolgpu.kernels allows.
//
// Groups are numbered flat (plane_slot), one per (plane, part) from plane_origin:
// unit = (n * C + c) * PARTS + part.

// The run of a plane each group reduces: SPAN, or where it is 0 (the shape-generic form)
// Params' span, so that one pipeline serves every plane size.
fn run_span() -> u32 {
    if (SPAN != 0u) { return SPAN; }
    return params.span;
}

// Where acc_save (common/*_partials.wgsl) puts a part's words.
fn save_word(e: u32, v: u32) { part_word_store(e, v); }
fn load_word(e: u32) -> u32 { return part_word(e); }

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let slot = plane_slot(wg, lane);
    let live = slot < params.planes;   // a group past the end only meets the barriers
    let unit = params.plane_origin + slot;
    let nc = unit / PARTS;   // out_d = 1: a plane is an (n, c)
    let part = unit % PARTS;
    let at = Out(nc / params.channels, nc % params.channels, 0u, 0u, 0u);
    let x_plane = params.x_base + at.n * params.x_n + at.c * params.x_c;
    let plane_size = params.in_d * params.in_h * params.in_w;
    let l = lane % group_lanes();
    var acc = acc_new();
    if (live) {   // the run: binding elements [first, end)
        let span = run_span();
        let first = x_plane + part * span;
        acc = lane_acc(l, first, x_plane + min(plane_size, (part + 1u) * span), x_plane, nc * plane_size);
    }
    acc = group_acc(lane, acc);
    if (!live || l != 0u) { return; }
    if (PARTS > 1u) {
        acc_save(params.part_base + unit * ACC_WORDS, acc);
        return;
    }
    store_one(at, acc);
}

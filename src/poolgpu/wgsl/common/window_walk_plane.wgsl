// The plane walk (see window_geometry.wgsl), for windows covering the whole input plane
// (global pooling: one output per (n, c)) on GPUs, where a thread walking a plane alone
// would leave all but a few of the GPU's lanes idle (poolgpu.kernels picks it).  A workgroup of
// PLANE_LANES invocations reduces one plane: lane i feeds its accumulator elements i,
// i + PLANE_LANES, ... (neighbouring lanes read neighbouring elements), then the lanes'
// accumulators merge pairwise in a tree in workgroup memory.  The operator's acc_merge
// combines the accumulators of two disjoint sets of taps: max takes the larger key, and the
// smaller index among equal keys, which is the sequential walks' first maximum; sums add
// with compensation (their rounding differs from the sequential walks' by an ulp or so).
//
// Workgroups are numbered flat (kernels.fold_groups), one per plane from plane_origin.

const PLANE_LANES: u32 = 256u;   // = kernels.PLANE_LANES (its test checks)
override FLAT_PLANE: bool = false;   // x's plane is contiguous: element e is at offset e

var<workgroup> lane_accs: array<Acc, PLANE_LANES>;

@compute @workgroup_size(PLANE_LANES)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let group = wg.y * 65535u + wg.x;
    let live = group < params.planes;   // uniform: a group past the end only meets the barriers
    let nc = params.plane_origin + group;   // out_d = 1: a plane is an (n, c)
    let at = Out(nc / params.channels, nc % params.channels, 0u, 0u, 0u);
    let x_plane = params.x_base + at.n * params.x_n + at.c * params.x_c;
    let plane_size = params.in_d * params.in_h * params.in_w;
    let logical_plane = nc * plane_size;

    var acc = acc_new();
    if (live) {
        for (var e = lane; e < plane_size; e += PLANE_LANES) {
            var offset = e;
            if (!FLAT_PLANE) {
                let dh = e / params.in_w;
                offset = (dh / params.in_h) * params.x_d + (dh % params.in_h) * params.x_h + (e % params.in_w) * params.x_w;
            }
            acc = acc_add(acc, tap_of(x_load(x_plane + offset)), logical_plane + e, true);
        }
    }
    lane_accs[lane] = acc;
    workgroupBarrier();
    for (var half = PLANE_LANES / 2u; half > 0u; half >>= 1u) {
        if (lane < half) {
            lane_accs[lane] = acc_merge(lane_accs[lane], lane_accs[lane + half]);
        }
        workgroupBarrier();
    }
    if (live && lane == 0u) {
        let total = lane_accs[0];
        y_store(y_offset(at), acc_value(total, at));
        idx_store_index(idx_offset(at), acc_index(total));
    }
}

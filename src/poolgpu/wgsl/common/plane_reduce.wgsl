// The plane walk's reduction (window_walk_plane.wgsl, and the gradients of global pooling:
// max_pool_grad_plane.wgsl): one window covering each whole input plane, the plane contiguous
// in x.  A workgroup of WG_X lanes holds WG_X / PLANE_LANES groups of PLANE_LANES lanes (a
// power of two); each group reduces a run of one plane (a whole plane, or part of a large
// one: SPAN elements, part `part` of its PARTS).  Small planes pack many groups into a
// workgroup, large ones take it whole (PLANE_LANES = WG_X).
//
// Lane l of a group reads the run's 4-element chunks l, l + PLANE_LANES, ... (one 16-byte
// load for 32-bit types: neighbouring lanes read neighbouring chunks) and feeds each chunk's
// elements in increasing index to its accumulator; then a group's accumulators merge pairwise
// in a tree in workgroup memory, every group at once (log2(PLANE_LANES) levels).  acc_merge
// combines the accumulators of two disjoint sets of taps: max takes the larger key, and the
// smaller index among equal keys, which is the sequential walks' first maximum; sums add with
// compensation (their rounding differs from the sequential walks' by an ulp or so).
//
// Chunks are aligned to the binding (which starts at a multiple of 16 bytes), so the run's
// first and last chunks may hold elements before or past it (a neighbouring plane's, or past
// the binding's end: a clamped, ignored value): the lanes taking those two (lane 0 the first)
// mask such elements out; the chunks between are read unmasked.  Each lane's chunks stay in
// increasing index.

const PLANE_LANES_MAX: u32 = 256u;   // = Tuning's largest plane_lanes (its test checks)
// The run each group reduces (window_walk_plane.wgsl's run_span(): where 0, Params' span);
// the lanes per group: group_lanes() (common/plane_lanes.wgsl).
override SPAN: u32 = 0u;
override PARTS: u32 = 1u;
// Chunks a lane loads per step of its walk (Tuning.plane_chunks: 1, 2 or 4).  Written out,
// their loads are in flight together; one chunk per step, each load waits for the previous
// chunk's taps.  The lane feeds its chunks to its accumulator in the same order either way,
// so the results are the same bits.
override STEP: u32 = 1u;

var<workgroup> lane_accs: array<Acc, PLANE_LANES_MAX>;

// The group's unit (a plane, or a plane's part) among the dispatch's, numbered flat
// (kernels.fold_groups over workgroups); past the end where it is >= params.planes.
fn plane_slot(wg: vec3<u32>, lane: u32) -> u32 {
    let lanes = group_lanes();
    let first = (wg.y * 65535u + wg.x) * (WG_X / lanes);
    // (a workgroup's one group: the same for every lane, so that a GPU's compiler keeps the
    // plane's addressing in scalar registers)
    if (lanes == WG_X) { return first; }
    return first + lane / lanes;
}

// The chunk of binding elements [4 * q, 4 * q + 4), those in [first, end) as taps (element e
// has the logical index index + e).
fn edge_chunk(acc: Acc, q: u32, first: u32, end: u32, index: u32) -> Acc {
    let chunk = x_load4(4u * q);
    let e = 4u * q;
    var a = acc;
    a = acc_add(a, tap_of(chunk[0]), index + e, e >= first && e < end);
    a = acc_add(a, tap_of(chunk[1]), index + e + 1u, e + 1u >= first && e + 1u < end);
    a = acc_add(a, tap_of(chunk[2]), index + e + 2u, e + 2u >= first && e + 2u < end);
    a = acc_add(a, tap_of(chunk[3]), index + e + 3u, e + 3u >= first && e + 3u < end);
    return a;
}

// A chunk wholly inside the run.
fn inner_chunk(acc: Acc, q: u32, index: u32) -> Acc {
    return chunk_taps(acc, x_load4(4u * q), index);
}

// A chunk's elements (the first's logical index `index`) as taps, in order.
fn chunk_taps(acc: Acc, chunk: array<Raw, 4>, index: u32) -> Acc {
    var a = acc;
    a = acc_add(a, tap_of(chunk[0]), index, true);
    a = acc_add(a, tap_of(chunk[1]), index + 1u, true);
    a = acc_add(a, tap_of(chunk[2]), index + 2u, true);
    a = acc_add(a, tap_of(chunk[3]), index + 3u, true);
    return a;
}

// The lane's chunks q0, q0 + lanes, ... before `last`, STEP per step (their loads
// first), then the rest one by one.
fn stepped_chunks(acc: Acc, q0: u32, last: u32, index: u32) -> Acc {
    let lanes = group_lanes();
    var a = acc;
    let count = select(0u, (last - q0 + lanes - 1u) / lanes, q0 < last);
    let steps = count / STEP;
    for (var s = 0u; s < steps; s++) {
        let q = q0 + s * STEP * lanes;
        let c0 = x_load4(4u * q);
        let c1 = x_load4(4u * (q + lanes));
        if (STEP == 2u) {
            a = chunk_taps(a, c0, index + 4u * q);
            a = chunk_taps(a, c1, index + 4u * (q + lanes));
            continue;
        }
        let c2 = x_load4(4u * (q + 2u * lanes));
        let c3 = x_load4(4u * (q + 3u * lanes));
        a = chunk_taps(a, c0, index + 4u * q);
        a = chunk_taps(a, c1, index + 4u * (q + lanes));
        a = chunk_taps(a, c2, index + 4u * (q + 2u * lanes));
        a = chunk_taps(a, c3, index + 4u * (q + 3u * lanes));
    }
    for (var r = q0 + steps * STEP * lanes; r < last; r += lanes) {
        a = inner_chunk(a, r, index + 4u * r);
    }
    return a;
}

// Lane l's accumulator of its group's run: binding elements [first, end) of the plane whose
// first element is binding element x_plane and has logical index logical_plane.
fn lane_acc(l: u32, first: u32, end: u32, x_plane: u32, logical_plane: u32) -> Acc {
    let lanes = group_lanes();
    var acc = acc_new();
    if (first >= end) { return acc; }
    let first_chunk = first >> 2u;
    let last_chunk = (end - 1u) >> 2u;
    let index = logical_plane - x_plane;   // + a binding element: its logical index
    if (l == 0u) { acc = edge_chunk(acc, first_chunk, first, end, index); }
    // the chunks between: lane l's are first_chunk + l + k * lanes (lane 0's from k = 1)
    let q0 = first_chunk + select(l, lanes, l == 0u);
    if (STEP == 1u) {
        for (var q = q0; q < last_chunk; q += lanes) {
            acc = inner_chunk(acc, q, index + 4u * q);
        }
    } else {
        acc = stepped_chunks(acc, q0, last_chunk, index);
    }
    if (last_chunk > first_chunk && (last_chunk - first_chunk) % lanes == l) {
        acc = edge_chunk(acc, last_chunk, first, end, index);
    }
    return acc;
}

// The accumulator of the lane's whole group, for every lane of it: the group's accumulators
// merged in a tree in workgroup memory.  Every lane of the workgroup calls it (barriers).
fn group_acc(lane: u32, acc: Acc) -> Acc {
    let lanes = group_lanes();
    if (lanes == 1u) { return acc; }
    let l = lane % lanes;
    lane_accs[lane] = acc;
    workgroupBarrier();
    for (var half = lanes / 2u; half > 0u; half >>= 1u) {
        if (l < half) {
            lane_accs[lane] = acc_merge(lane_accs[lane], lane_accs[lane + half]);
        }
        workgroupBarrier();
    }
    return lane_accs[lane - l];
}

// The plane walk (see window_geometry.wgsl): global pooling (one window covering each whole
// input plane, the plane contiguous in x) as a reduction.  A workgroup of WG_X lanes reduces
// a run of SPAN elements of one plane, part `part` of its PARTS: the lanes read neighbouring
// 4-element chunks (one 16-byte load for 32-bit types), chunk after chunk WG_X apart, and
// feed each chunk's elements in increasing index to their accumulators; then the lanes'
// accumulators merge pairwise in a tree in workgroup memory.  acc_merge combines the
// accumulators of two disjoint sets of taps: max takes the larger key, and the smaller index
// among equal keys, which is the sequential walks' first maximum; sums add with compensation
// (their rounding differs from the sequential walks' by an ulp or so).  Where a plane has
// more than one part, each workgroup saves its accumulator (acc_save) and
// window_walk_merge.wgsl merges a plane's parts in order: several workgroups per plane keep a
// GPU busy where planes are few, and no lane loops longer than poolgpu.kernels allows.
//
// Chunks are aligned to the binding (which starts at a multiple of 16 bytes), so the run's
// first and last chunks may hold elements before or past it: lane 0 walks those two (first
// and last: its taps stay in increasing index), masking such elements out (a chunk past the
// binding's end reads a clamped, ignored value); the lanes walk the chunks between unmasked.
//
// Workgroups are numbered flat (kernels.fold_groups), one per (plane, part) from
// plane_origin: unit = (n * C + c) * PARTS + part.

const PLANE_LANES_MAX: u32 = 256u;   // = Tuning's largest plane_lanes (its test checks)
override SPAN: u32 = 4096u;
override PARTS: u32 = 1u;
// Chunks a lane loads per step of its walk (Tuning.plane_chunks: 1, 2 or 4).  Written out,
// their loads are in flight together; one chunk per step, each load waits for the previous
// chunk's taps.  The lane feeds its chunks to its accumulator in the same order either way,
// so the results are the same bits.
override STEP: u32 = 1u;

var<workgroup> lane_accs: array<Acc, PLANE_LANES_MAX>;

// Where acc_save (common/*_partials.wgsl) puts a part's words.
fn save_word(e: u32, v: u32) { part_word_store(e, v); }
fn load_word(e: u32) -> u32 { return part_word(e); }

// The chunk of binding elements [4 * q, 4 * q + 4) (element e is the plane's element
// e - x_plane), those in [first, end) as taps.
fn edge_chunk(acc: Acc, q: u32, first: u32, end: u32, x_plane: u32, logical_plane: u32) -> Acc {
    let chunk = x_load4(4u * q);
    let e = 4u * q;
    var a = acc;
    a = acc_add(a, tap_of(chunk[0]), logical_plane + e - x_plane, e >= first && e < end);
    a = acc_add(a, tap_of(chunk[1]), logical_plane + e + 1u - x_plane, e + 1u >= first && e + 1u < end);
    a = acc_add(a, tap_of(chunk[2]), logical_plane + e + 2u - x_plane, e + 2u >= first && e + 2u < end);
    a = acc_add(a, tap_of(chunk[3]), logical_plane + e + 3u - x_plane, e + 3u >= first && e + 3u < end);
    return a;
}

// A chunk wholly inside the run.
fn inner_chunk(acc: Acc, q: u32, index: u32) -> Acc {
    return chunk_taps(acc, x_load4(4u * q), index);
}

// A chunk's elements (the first's flat index `index`) as taps, in order.
fn chunk_taps(acc: Acc, chunk: array<Raw, 4>, index: u32) -> Acc {
    var a = acc;
    a = acc_add(a, tap_of(chunk[0]), index, true);
    a = acc_add(a, tap_of(chunk[1]), index + 1u, true);
    a = acc_add(a, tap_of(chunk[2]), index + 2u, true);
    a = acc_add(a, tap_of(chunk[3]), index + 3u, true);
    return a;
}

// The lane's chunks q0, q0 + WG_X, ... before `last`, STEP per step (their loads first), then
// the rest one by one.
fn stepped_chunks(acc: Acc, q0: u32, last: u32, index: u32) -> Acc {
    var a = acc;
    let count = select(0u, (last - q0 + WG_X - 1u) / WG_X, q0 < last);
    let steps = count / STEP;
    for (var s = 0u; s < steps; s++) {
        let q = q0 + s * STEP * WG_X;
        let c0 = x_load4(4u * q);
        let c1 = x_load4(4u * (q + WG_X));
        if (STEP == 2u) {
            a = chunk_taps(a, c0, index + 4u * q);
            a = chunk_taps(a, c1, index + 4u * (q + WG_X));
            continue;
        }
        let c2 = x_load4(4u * (q + 2u * WG_X));
        let c3 = x_load4(4u * (q + 3u * WG_X));
        a = chunk_taps(a, c0, index + 4u * q);
        a = chunk_taps(a, c1, index + 4u * (q + WG_X));
        a = chunk_taps(a, c2, index + 4u * (q + 2u * WG_X));
        a = chunk_taps(a, c3, index + 4u * (q + 3u * WG_X));
    }
    for (var r = q0 + steps * STEP * WG_X; r < last; r += WG_X) {
        a = inner_chunk(a, r, index + 4u * r);
    }
    return a;
}

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let group = wg.y * 65535u + wg.x;
    let live = group < params.planes;   // uniform: a group past the end only meets the barriers
    let unit = params.plane_origin + group;
    let nc = unit / PARTS;   // out_d = 1: a plane is an (n, c)
    let part = unit % PARTS;
    let at = Out(nc / params.channels, nc % params.channels, 0u, 0u, 0u);
    let x_plane = params.x_base + at.n * params.x_n + at.c * params.x_c;
    let plane_size = params.in_d * params.in_h * params.in_w;
    let logical_plane = nc * plane_size;
    // the run's binding elements [first, end), its chunks [first / 4, last]
    let first = x_plane + part * SPAN;
    let end = x_plane + min(plane_size, (part + 1u) * SPAN);
    let first_chunk = first >> 2u;
    let last_chunk = (end - 1u) >> 2u;

    var acc = acc_new();
    if (live && first < end) {
        if (lane == 0u) { acc = edge_chunk(acc, first_chunk, first, end, x_plane, logical_plane); }
        let index = logical_plane - x_plane;   // + a binding element: its logical index
        if (STEP == 1u) {
            for (var q = first_chunk + 1u + lane; q < last_chunk; q += WG_X) {
                acc = inner_chunk(acc, q, index + 4u * q);
            }
        } else {
            acc = stepped_chunks(acc, first_chunk + 1u + lane, last_chunk, index);
        }
        if (lane == 0u && last_chunk > first_chunk) {
            acc = edge_chunk(acc, last_chunk, first, end, x_plane, logical_plane);
        }
    }
    lane_accs[lane] = acc;
    workgroupBarrier();
    for (var half = WG_X / 2u; half > 0u; half >>= 1u) {
        if (lane < half) {
            lane_accs[lane] = acc_merge(lane_accs[lane], lane_accs[lane + half]);
        }
        workgroupBarrier();
    }
    if (!live || lane != 0u) { return; }
    if (PARTS > 1u) {
        acc_save(params.part_base + unit * ACC_WORDS, lane_accs[0]);
        return;
    }
    store_one(at, lane_accs[0]);
}

// Max unpooling's passes over input elements (max_unpool_winners.wgsl,
// max_unpool_scatter.wgsl): the input elements of an invocation and the output element
// each one's index names.  The grid (common/grid.wgsl) is (column, h, (n, c, d)) over the
// input, an invocation taking four elements along W (fewer invocations: on lavapipe each
// costs more than its few loads; four made both passes about 1.7x faster on case A),
// written out as four calls with constant k (see run_index).  ALONG_C (channels-last
// indices, C a multiple of 4: poolgpu.kernels checks): (column, w, (n, d, h)), an
// invocation taking four channels, so that neighbouring lanes read neighbouring indices
// and elements, and write neighbouring outputs.
// The kernel's Params holds channels, in_d, in_h, in_w, idx_base and idx_n .. idx_w,
// out_first and out_count.

override WIDE_INDICES: bool = false;  // UINT64 indices: a nonzero high word is out of range
override ALONG_C: bool = false;       // runs of four channels, not of four columns

struct UnpoolSource {
    counts: bool,   // a real input element whose index lies in [out_first, out_first + out_count)
    j: u32,         // its flat logical index
    n: u32, c: u32, d: u32, h: u32, w: u32,
    dest: u32,      // the output element its index names (flat logical index)
}

// An invocation's run of a row: input elements w = 4 * column + k (k < 4), or where
// ALONG_C channels c + k of column w = w0, their indices read by run_indices()
// (common/unpool_indices1.wgsl or unpool_indices4.wgsl).
struct UnpoolRow {
    inside: bool,
    n: u32, c: u32, d: u32, h: u32, w0: u32,
    first_j: u32,                   // the flat logical index of element 0 of the run
    indices: array<vec2<u32>, 4>,   // (low, high) words
}

fn unpool_row(wg: vec3<u32>, lid: vec3<u32>) -> UnpoolRow {
    let pos = grid_position(wg, lid);
    var r: UnpoolRow;
    if (pos.x >= params.columns) { return r; }   // inside: false
    r.inside = true;
    if (ALONG_C) {   // (column, w, (n, d, h))
        r.c = 4u * pos.x;
        r.w0 = pos.y;
        let nd = pos.z / params.in_h;
        r.h = pos.z - nd * params.in_h;
        r.n = nd / params.in_d;
        r.d = nd - r.n * params.in_d;
        r.first_j = (((r.n * params.channels + r.c) * params.in_d + r.d) * params.in_h + r.h) * params.in_w + r.w0;
        r.indices = run_indices(r);
        return r;
    }
    r.w0 = 4u * pos.x;
    r.h = pos.y;
    // (n, c, d): uniform across a workgroup shaped to lines of one plane (common/grid.wgsl)
    var nc = pos.z;
    if (params.in_d != 1u) {
        nc = pos.z / params.in_d;
        r.d = pos.z - nc * params.in_d;
    }
    r.n = nc / params.channels;
    r.c = nc - r.n * params.channels;
    r.first_j = (pos.z * params.in_h + r.h) * params.in_w + r.w0;
    r.indices = run_indices(r);
    return r;
}

// The index of element k of the run.  The passes call this (and unpool_source) with
// constant k, their four elements written out: an array indexed by a loop variable lives in
// memory (local memory on GPUs, a stack slot on lavapipe), and the selects fold away.
fn run_index(r: UnpoolRow, k: u32) -> vec2<u32> {
    return select(select(r.indices[0], r.indices[1], k == 1u), select(r.indices[2], r.indices[3], k == 3u), k >= 2u);
}

// Element k of the run (counts: false past the row's end).
fn unpool_source(r: UnpoolRow, k: u32) -> UnpoolSource {
    var s: UnpoolSource;
    s.n = r.n; s.c = r.c; s.d = r.d; s.h = r.h; s.w = r.w0;
    if (ALONG_C) {   // (C a multiple of 4: every run inside)
        s.c = r.c + k;
        s.j = r.first_j + k * params.in_d * params.in_h * params.in_w;
    } else {
        s.w = r.w0 + k;
        s.j = r.first_j + k;
    }
    if (!r.inside || s.w >= params.in_w) { return s; }
    let index = run_index(r, k);
    s.dest = index.x;
    s.counts = (!WIDE_INDICES || index.y == 0u) && index.x - params.out_first < params.out_count;
    return s;
}

// Max unpooling (DirectML MAX_UNPOOLING) as a gather over the output, after
// max_unpool_strays.wgsl: every output element finds its winner (the largest input element j
// whose index names it) among the input elements whose band holds it
// (common/unpool_band.wgsl: for indices written by max pooling, the windows covering it),
// visited largest j first, and among the strays of its plane (the winner scratch, read only
// where flags marks the plane).  It writes x[j]'s raw bits (any of the ten types) or the
// type's zero: every output element exactly once, neighbouring lanes on neighbouring elements.
// Reading a winner word resets it (the scratch is clean for the next call; poolgpu.kernels
// clears the flags after this pass).
//
// An invocation writes a run of RUN output elements (1 or 4: one 16-byte store where the
// output is contiguous along the run) along W, or along C (ALONG_C: channels-last outputs,
// lanes along C).  The grid (common/grid.wgsl) is (column, line, plane) = (ow / RUN, oh,
// (n, c, od)), or along C (c / RUN, ow, (n, od, oh)).
//
// Prepended by poolgpu.kernels: the value type (Raw) and the tensors x (x_load), idx, flags
// (flags_load), winner and y; appended: divide.wgsl, grid.wgsl, unpool_band.wgsl, the reading
// of idx (unpool_candidates1.wgsl or unpool_candidates4.wgsl), of the winners
// (unpool_strays1.wgsl or unpool_strays4.wgsl) and the writing of y (unpool_store1.wgsl or
// unpool_store4.wgsl).

override RUN: u32 = 1u;            // output elements per invocation: 1 or 4
override ALONG_C: bool = false;    // the run and the lanes along C, else along W
override WIDE_INDICES: bool = false;  // UINT64 indices: a nonzero high word names no output element
override PACKED_INPUT: bool = false;  // x packed: an element's offset is its flat index
// Input coordinates visited per output element along D and H (at most 3), and along W for
// the whole run (at most 6): the bands holding them (poolgpu.kernels counts them).
override CANDIDATES_D: u32 = 1u;
override CANDIDATES_H: u32 = 1u;
override CANDIDATES_W: u32 = 1u;
// Along W: the run's first output column w is a multiple of the bands' stride, so which of
// its outputs each candidate column's band holds is known here (the tests fold away).
override RUN_ALIGNED: bool = false;

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

// Per output element k of the run: its winner's j + 1 (0: none yet) and that element's offset
// in x.  Read and written whole, component k picked by selects on a constant k: a vector
// indexed by a variable is kept in memory by some compilers (lavapipe: 2.4x slower).
var<private> best: vec4<u32>;
var<private> best_at: vec4<u32>;

fn lane(k: u32) -> vec4<bool> { return vec4<u32>(0u, 1u, 2u, 3u) == vec4<u32>(k); }
fn component(v: vec4<u32>, k: u32) -> u32 { return select(select(v.x, v.y, k == 1u), select(v.z, v.w, k == 3u), k >= 2u); }

// Output element k of the run takes input element j + 1 (at `at` in x) where `wins`.
fn take(k: u32, wins: bool, j1: u32, at: u32) {
    let taken = lane(k) & vec4<bool>(wins);
    best = select(best, vec4<u32>(j1), taken);
    best_at = select(best_at, vec4<u32>(at), taken);
}

struct Run {
    n: u32, c: u32,            // c: the run's first channel
    d: u32, h: u32, w: u32,    // the run's first output element (w: its first along W)
    t: u32,                    // that element's flat logical index
    j_plane: u32,              // the flat logical index of input element (n, c, 0, 0, 0)
    x_plane: u32, idx_plane: u32,   // its offsets in x and idx
}

fn run_of(pos: vec3<u32>) -> Run {
    var r: Run;
    // the plane: uniform across a workgroup (common/grid.wgsl), divided by multiply-high
    if (ALONG_C) {
        r.c = RUN * pos.x;
        r.w = pos.y;
        let rows = divide(pos.z, params.out_h, params.out_h_magic, params.out_h_shift);   // (n, od)
        r.h = pos.z - rows * params.out_h;
        r.n = divide(rows, params.out_d, params.out_d_magic, params.out_d_shift);
        r.d = rows - r.n * params.out_d;
    } else {
        r.w = RUN * pos.x;
        r.h = pos.y;
        let nc = divide(pos.z, params.out_d, params.out_d_magic, params.out_d_shift);
        r.d = pos.z - nc * params.out_d;
        r.n = divide(nc, params.channels, params.channels_magic, params.channels_shift);
        r.c = nc - r.n * params.channels;
    }
    let nc = r.n * params.channels + r.c;
    r.t = ((nc * params.out_d + r.d) * params.out_h + r.h) * params.out_w + r.w;
    r.j_plane = nc * params.in_d * params.in_h * params.in_w;
    r.x_plane = params.x_base + r.n * params.x_n + r.c * params.x_c;
    r.idx_plane = params.idx_base + r.n * params.idx_n + r.c * params.idx_c;
    return r;
}

fn names(index: vec2<u32>, t: u32) -> bool { return index.x == t && (!WIDE_INDICES || index.y == 0u); }

// The last candidate column of the run (the largest input column whose band holds one of its
// outputs).
fn last_column(r: Run) -> u32 {
    if (ALONG_C) { return band_last(r.w, BAND_STRIDE_W, BAND_BEFORE_W); }
    if (RUN_ALIGNED) { return r.w / BAND_STRIDE_W + (RUN - 1u + BAND_BEFORE_W) / BAND_STRIDE_W; }
    return band_last(r.w + RUN - 1u, BAND_STRIDE_W, BAND_BEFORE_W);
}

// Along W: whether candidate column c (0: the last) holds output k of the run in its band.
fn column_holds(r: Run, jw: u32, c: u32, k: u32) -> bool {
    if (RUN_ALIGNED) {   // (w + k + before - jw * stride, with w a multiple of the stride: constants)
        let last = (RUN - 1u + BAND_BEFORE_W) / BAND_STRIDE_W;
        return k + BAND_BEFORE_W + c * BAND_STRIDE_W - last * BAND_STRIDE_W < BAND_WIDTH_W;
    }
    return band_holds(r.w + k, jw, BAND_STRIDE_W, BAND_BEFORE_W, BAND_WIDTH_W);
}

// Input element (jd, jh, jw) of the run's plane (of each of its planes, along C), candidate
// column c, whose band holds the run's output coordinates along D and H (and W, along C).
fn visit(r: Run, jd: u32, jh: u32, jw: u32, c: u32) {
    let j1 = r.j_plane + (jd * params.in_h + jh) * params.in_w + jw + 1u;
    let at = r.x_plane + jd * params.x_d + jh * params.x_h + jw * params.x_w;
    let v = candidate_indices(r.idx_plane + jd * params.idx_d + jh * params.idx_h + jw * params.idx_w);
    let open = best == vec4<u32>(0u);   // (the candidates come largest j first: the first found wins)
    if (ALONG_C) {   // output element k: channel c + k, the same coordinates
        let in_plane = params.in_d * params.in_h * params.in_w;
        let out_plane = params.out_d * params.out_h * params.out_w;
        take(0u, open.x && names(v[0], r.t), j1, at);
        if (RUN == 1u) { return; }
        take(1u, open.y && names(v[1], r.t + out_plane), j1 + in_plane, at + params.x_c);
        take(2u, open.z && names(v[2], r.t + 2u * out_plane), j1 + 2u * in_plane, at + 2u * params.x_c);
        take(3u, open.w && names(v[3], r.t + 3u * out_plane), j1 + 3u * in_plane, at + 3u * params.x_c);
        return;
    }
    // along W: output element k at w + k, one index tested against each whose band holds it
    take(0u, open.x && column_holds(r, jw, c, 0u) && names(v[0], r.t), j1, at);
    if (RUN == 1u) { return; }
    take(1u, open.y && column_holds(r, jw, c, 1u) && names(v[0], r.t + 1u), j1, at);
    take(2u, open.z && column_holds(r, jw, c, 2u) && names(v[0], r.t + 2u), j1, at);
    take(3u, open.w && column_holds(r, jw, c, 3u) && names(v[0], r.t + 3u), j1, at);
}

// Candidate column c (0: the last) of a row of candidates.
fn column(r: Run, jd: u32, jh: u32, last: u32, c: u32) {
    if (c >= CANDIDATES_W) { return; }
    let jw = last - c;
    if (jw >= params.in_w) { return; }   // (past either end: unsigned)
    if (ALONG_C && !band_holds(r.w, jw, BAND_STRIDE_W, BAND_BEFORE_W, BAND_WIDTH_W)) { return; }
    visit(r, jd, jh, jw, c);
}

// Candidate row c (0: the last) along H.
fn row(r: Run, jd: u32, last: u32, c: u32) {
    if (c >= CANDIDATES_H) { return; }
    let jh = last - c;
    if (jh >= params.in_h || !band_holds(r.h, jh, BAND_STRIDE_H, BAND_BEFORE_H, BAND_WIDTH_H)) { return; }
    let w_last = last_column(r);
    column(r, jd, jh, w_last, 0u);
    column(r, jd, jh, w_last, 1u);
    column(r, jd, jh, w_last, 2u);
    column(r, jd, jh, w_last, 3u);
    column(r, jd, jh, w_last, 4u);
    column(r, jd, jh, w_last, 5u);
}

// Candidate depth c (0: the last) along D.
fn depth(r: Run, last: u32, h_last: u32, c: u32) {
    if (c >= CANDIDATES_D) { return; }
    let jd = last - c;
    if (jd >= params.in_d || !band_holds(r.d, jd, BAND_STRIDE_D, BAND_BEFORE_D, BAND_WIDTH_D)) { return; }
    row(r, jd, h_last, 0u);
    row(r, jd, h_last, 1u);
    row(r, jd, h_last, 2u);
}

// The offset in x of input element j (flat logical index), a stray: j itself where x is
// packed, else its coordinates by multiply-high divisions.
fn x_offset(j: u32) -> u32 {
    if (PACKED_INPUT) { return params.x_base + j; }
    let rows = divide(j, params.in_w, params.in_w_magic, params.in_w_shift);   // (n, c, d, h)
    let planes = divide(rows, params.in_h, params.in_h_magic, params.in_h_shift);   // (n, c, d)
    let nc = divide(planes, params.in_d, params.in_d_magic, params.in_d_shift);
    let n = divide(nc, params.channels, params.channels_magic, params.channels_shift);
    return params.x_base + n * params.x_n + (nc - n * params.channels) * params.x_c
           + (planes - nc * params.in_d) * params.x_d + (rows - planes * params.in_h) * params.x_h
           + (j - rows * params.in_w) * params.x_w;
}

// Output element k of the run: the stray `winner` (j + 1, 0: none) where it beats the bands'.
fn stray(k: u32, winner: u32) {
    if (k < RUN && winner > component(best, k)) { take(k, true, winner, x_offset(winner - 1u)); }
}

// The value output element k of the run gets.
fn unpooled(k: u32) -> Raw {
    if (component(best, k) == 0u) { return Raw(); }
    return x_load(component(best_at, k));
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let pos = grid_position(wg, lid);
    if (pos.x >= params.columns) { return; }
    let r = run_of(pos);
    best = vec4<u32>(0u);
    best_at = vec4<u32>(0u);
    let d_last = band_last(r.d, BAND_STRIDE_D, BAND_BEFORE_D);
    let h_last = band_last(r.h, BAND_STRIDE_H, BAND_BEFORE_H);
    depth(r, d_last, h_last, 0u);
    depth(r, d_last, h_last, 1u);
    depth(r, d_last, h_last, 2u);
    // the strays (max_unpool_strays.wgsl) of the run's planes that have any
    let winners = stray_winners(r.n * params.channels + r.c, r.t);
    stray(0u, winners.x);
    stray(1u, winners.y);
    stray(2u, winners.z);
    stray(3u, winners.w);
    store_run(params.y_base + r.n * params.y_n + r.c * params.y_c + r.d * params.y_d + r.h * params.y_h
              + r.w * params.y_w);
}

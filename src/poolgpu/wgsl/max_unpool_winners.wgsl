// Max unpooling (DirectML MAX_UNPOOLING), pass 1 of 2: pick each output element's winner.
//
// One invocation per input element j (flat logical index): if indices[j] lies inside the
// output, atomicMax(winner[indices[j]], j + 1), so the largest j wins wherever indices
// repeat, whatever order invocations run in.  0 means "no j": pass 2 writes the type's zero.
// For outputs larger than a binding (kernels.chunked) each chunk of output elements
// [out_first, out_first + out_count) gets its winners from every input element in turn.
//
// Prepended by kernels.py: the tensors idx (idx_load: u32, or (low, high) for UINT64) and
// winner (winner_max; packed over the output's logical elements).

override WIDE_INDICES: bool = false;  // UINT64 indices: a nonzero high word is out of range
override WG_X: u32 = 64u;

struct Params {
    idx_base: u32, winner_base: u32,
    channels: u32,
    in_d: u32, in_h: u32, in_w: u32,
    idx_n: u32, idx_c: u32, idx_d: u32, idx_h: u32, idx_w: u32,
    out_first: u32, out_count: u32,  // the output elements whose winners this dispatch picks
    // rows of in_w inputs, N * C * in_d * in_h in all (common/row_grid.wgsl)
    column_groups: u32, rows: u32, row_origin: u32,
}
@group(0) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let at = row_position(wg, lane);
    let w = at.column;
    let row = at.row;
    if (w >= params.in_w || !at.inside) { return; }
    let h = row % params.in_h;
    let d = (row / params.in_h) % params.in_d;
    let nc = row / (params.in_h * params.in_d);
    let n = nc / params.channels;
    let c = nc % params.channels;

    // vec2 of a u32 repeats it, of a (low, high) pair keeps it; the high word counts only
    // for UINT64 indices.
    let index = vec2<u32>(idx_load(params.idx_base + n * params.idx_n + c * params.idx_c + d * params.idx_d
                                   + h * params.idx_h + w * params.idx_w));
    // (winner_base is the winner of output element 0: below the binding in a chunk)
    if ((!WIDE_INDICES || index.y == 0u) && index.x - params.out_first < params.out_count) {
        winner_max(params.winner_base + index.x, row * params.in_w + w + 1u);
    }
}

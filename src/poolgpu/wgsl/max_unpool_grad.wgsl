// Max unpooling gradient: dx[j] = dy.flat[indices.flat[j]] where input element j reached
// the unpooled output, else the type's zero (its index lies outside dy, or a larger j with
// the same index won that output element).  A gather over dx, after
// max_unpool_winners.wgsl has picked each dy element's winner (the largest j + 1, by an
// integer atomicMax: the same winners whatever the order); every dx element is written
// exactly once, so the result is the same bits run after run.
//
// Only the winner resets its word to 0 (the scratch is clean for the next call); another
// invocation reading it meanwhile sees the winner's j + 1 or 0, neither its own.
//
// dy larger than a binding (kernels.chunked): each chunk of dy elements [out_first,
// out_first + out_count) is gathered by the dx elements whose index lies in it; those whose
// index lies outside dy are zeroed with the chunk holding dy's first element (`zeros`).
//
// Prepended by poolgpu.kernels: the value type (Raw) and the tensors idx, winner (winner_load,
// winner_clear), dy (dy_load) and dx (dx_store); appended: grid.wgsl, unpool_source.wgsl,
// unpool_indices1.wgsl (reading idx), divide.wgsl and output_coordinates.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

// The offset in dy of dy element t (flat logical index).
fn dy_offset(t: u32) -> u32 {
    let at = output_coordinates(t);
    return params.dy_base + at.n * params.dy_n + at.c * params.dy_c + at.d * params.dy_d + at.h * params.dy_h
           + at.w * params.dy_w;
}

// Element k of the run (k constant: see unpool_source.wgsl's run_index).
fn gather(r: UnpoolRow, k: u32) {
    if (!r.inside || r.w0 + k >= params.in_w) { return; }
    let s = unpool_source(r, k);
    let index = run_index(r, k);
    let outside = (WIDE_INDICES && index.y != 0u) || index.x >= params.dy_count;
    if (!s.counts && !(outside && params.zeros != 0u)) { return; }   // another chunk's
    var value = Raw();
    if (s.counts) {
        // (winner_base is the winner of dy element 0: below the binding in a chunk)
        let e = params.winner_base + s.dest;
        if (winner_load(e) == s.j + 1u) {
            winner_clear(e);
            value = dy_load(dy_offset(s.dest));
        }
    }
    dx_store(params.dx_base + s.n * params.dx_n + s.c * params.dx_c + s.d * params.dx_d + s.h * params.dx_h
             + s.w * params.dx_w, value);
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let r = unpool_row(wg, lid);
    gather(r, 0u);
    gather(r, 1u);
    gather(r, 2u);
    gather(r, 3u);
}

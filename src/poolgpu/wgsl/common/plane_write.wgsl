// A plane's dx written by its group of lanes (the gradients of global pooling,
// common/plane_reduce.wgsl's groups; group_lanes(): common/plane_lanes.wgsl): lane l writes
// the 4-element chunks l, l + lanes, ... of the binding elements [first, end) (neighbouring
// lanes, neighbouring chunks), a chunk wholly inside them in one store, the first and last
// chunks element by element (they may hold a neighbouring plane's elements, which another
// group writes).  The kernel gives each element's value: dx_of(p, k) for the plane's element
// k, from its PlaneDx.
fn write_plane(l: u32, first: u32, end: u32, p: PlaneDx) {
    let first_chunk = first >> 2u;
    let last_chunk = (end - 1u) >> 2u;
    let lanes = group_lanes();
    for (var chunk = first_chunk + l; chunk <= last_chunk; chunk += lanes) {
        let e = 4u * chunk;
        if (e >= first && e + 4u <= end) {
            let k = e - first;
            dx_store4(e, array<Raw, 4>(dx_of(p, k), dx_of(p, k + 1u), dx_of(p, k + 2u), dx_of(p, k + 3u)));
            continue;
        }
        // (written out: an array indexed by a loop variable lives in memory)
        if (e >= first && e < end) { dx_store(e, dx_of(p, e - first)); }
        if (e + 1u >= first && e + 1u < end) { dx_store(e + 1u, dx_of(p, e + 1u - first)); }
        if (e + 2u >= first && e + 2u < end) { dx_store(e + 2u, dx_of(p, e + 2u - first)); }
        if (e + 3u >= first && e + 3u < end) { dx_store(e + 3u, dx_of(p, e + 3u - first)); }
    }
}

// The lanes of each group reducing or writing a plane (common/plane_reduce.wgsl,
// plane_write.wgsl): a power of two, at most WG_X.  PLANE_LANES specialises them; where it is
// 0 (the shape-generic form, Tuning.shapes_in_params) they are read from Params, so that one
// pipeline serves planes of every size.
override PLANE_LANES: u32 = 0u;

fn group_lanes() -> u32 {
    if (PLANE_LANES != 0u) { return PLANE_LANES; }
    return params.plane_lanes;
}

// Whether the argmax at `e` is `me`, for the lanes of common/gather_lanes1.wgsl.
fn arg_hits(e: u32, me: u32) -> bool { return arg_load(e) == me; }

// The lanes of the one-pass disjoint max gradient (max_pool_grad_disjoint.wgsl) over
// channels-last tensors with C a multiple of 4 (CHANNELS_PER_LANE = 4): four neighbouring
// channels per invocation, x and dy read and dx written as 4-element chunks.
const LANES: u32 = 4u;
fn x_lanes(e: u32) -> vec4<u32> { let v = x_load4(e); return vec4<u32>(v[0], v[1], v[2], v[3]); }
fn dy_lanes(e: u32) -> vec4<u32> { let v = dy_load4(e); return vec4<u32>(v[0], v[1], v[2], v[3]); }
fn dx_lanes(e: u32, v: vec4<u32>) { dx_store4(e, array<Raw, 4>(v.x, v.y, v.z, v.w)); }

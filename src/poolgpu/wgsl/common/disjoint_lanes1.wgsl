// The lanes of the one-pass disjoint max gradient (max_pool_grad_disjoint.wgsl): one channel
// per invocation, element by element.  Values travel as vec4<u32> (Raw is u32 for the float
// types; lanes past LANES unused).  (common/disjoint_lanes4.wgsl: four channels.)
const LANES: u32 = 1u;
fn x_lanes(e: u32) -> vec4<u32> { return vec4<u32>(x_load(e), 0u, 0u, 0u); }
fn dy_lanes(e: u32) -> vec4<u32> { return vec4<u32>(dy_load(e), 0u, 0u, 0u); }
fn dx_lanes(e: u32, v: vec4<u32>) { dx_store(e, v.x); }

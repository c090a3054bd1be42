// Average pooling gradient of global pooling (DirectML AVERAGE_POOLING_GRAD with one window
// covering each whole input plane, contiguous in dx; adaptive average pooling's gradient to
// one output): every element of a plane gets 0 + dy / divisor (the plane's element count, or
// DIVISOR_OVERRIDE), rounded as the gathers round it (average_pool_grad.wgsl's share_of,
// adaptive_average_pool_grad.wgsl's: the same bits), written by groups of lanes in
// 4-element chunks (common/plane_write.wgsl).
//
// Prepended by poolgpu.kernels: the value type and the tensors dy (dy_load) and dx
// (dx_store4, dx_store); library: common/as_written.wgsl, plane_lanes.wgsl (the lanes per
// plane), plane_write.wgsl.  Groups are numbered flat over the planes (n * C + c) from
// plane_origin.

override DIVISOR_OVERRIDE: u32 = 0u;

struct PlaneDx { value: Raw }
fn dx_of(p: PlaneDx, k: u32) -> Raw { return p.value; }

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let lanes = group_lanes();
    let slot = (wg.y * 65535u + wg.x) * (WG_X / lanes) + lane / lanes;
    if (slot >= params.planes) { return; }
    let nc = params.plane_origin + slot;
    let n = nc / params.channels;
    let c = nc % params.channels;
    let plane_size = params.in_d * params.in_h * params.in_w;
    let divisor = divisor_as_written(select(plane_size, DIVISOR_OVERRIDE, DIVISOR_OVERRIDE != 0u));
    let dy = to_f32(dy_load(params.dy_base + n * params.dy_n + c * params.dy_c));
    // (a zero the compiler cannot see: 0.0 + x it would fold to x, keeping a -0 the gathers' sums lose)
    let sum = bitcast<f32>(params.opaque_zero) + as_written(dy / divisor);
    let dx_plane = params.dx_base + n * params.dx_n + c * params.dx_c;
    write_plane(lane % lanes, dx_plane, dx_plane + plane_size, PlaneDx(from_f32(sum)));
}

// Max pooling gradient of global pooling (DirectML MAX_POOLING_GRAD with one window covering
// each whole input plane, contiguous in x and dx; adaptive max pooling's gradient to one
// output): one pass, no scratch.  Each group of lanes finds its plane's argmax
// as the plane walk does (common/plane_reduce.wgsl under the max rule of
// common/max_accumulator.wgsl: the first maximum, NaN above everything), then writes the
// plane's dx (common/plane_write.wgsl): dy's bits at the argmax, zero elsewhere.  With
// SUMMED the argmax gets the float32 sum 0 + dy instead (the binned gathers' rounding:
// adaptive_max_pool_grad.wgsl's, whose results this kernel then gives).
//
// Prepended by poolgpu.kernels: the value type and the tensors x (x_load4), dy (dy_load) and
// dx (dx_store4, dx_store); library: common/max_accumulator.wgsl, plane_lanes.wgsl,
// plane_reduce.wgsl, plane_write.wgsl.  Groups are numbered flat (plane_slot) over the
// planes (n * C + c) from plane_origin.

override SUMMED: bool = false;

struct PlaneDx { winner: u32, dy: Raw }
fn dx_of(p: PlaneDx, k: u32) -> Raw { return select(Raw(0u), p.dy, k == p.winner); }

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let slot = plane_slot(wg, lane);
    let live = slot < params.planes;   // a group past the end only meets the barriers
    let nc = params.plane_origin + slot;
    let n = nc / params.channels;
    let c = nc % params.channels;
    let plane_size = params.in_d * params.in_h * params.in_w;
    let x_plane = params.x_base + n * params.x_n + c * params.x_c;
    let l = lane % group_lanes();
    var acc = acc_new();
    if (live) { acc = lane_acc(l, x_plane, x_plane + plane_size, x_plane, nc * plane_size); }
    acc = group_acc(lane, acc);
    if (!live) { return; }
    var dy = dy_load(params.dy_base + n * params.dy_n + c * params.dy_c);
    if (SUMMED) { dy = from_f32(bitcast<f32>(params.opaque_zero) + to_f32(dy)); }
    let dx_plane = params.dx_base + n * params.dx_n + c * params.dx_c;
    write_plane(l, dx_plane, dx_plane + plane_size, PlaneDx(acc.index - nc * plane_size, dy));
}

// The adaptive bins covering input i along dimension `axis` (0: D, 1: H, 2: W), the same for
// every plane: adaptive_range with in and out swapped (common/adaptive_range.wgsl).  Reads
// the Params fields in_d, in_h, in_w (dx's) and out_d, out_h, out_w (dy's).
fn covering(nc: u32, axis: u32, i: u32) -> vec2<u32> {
    let sizes_in = vec3<u32>(params.in_d, params.in_h, params.in_w);
    let sizes_out = vec3<u32>(params.out_d, params.out_h, params.out_w);
    return adaptive_range(i, sizes_out[axis], sizes_in[axis]);
}

// Whether the four argmaxes from `e` (channels-last) are the four channels' own flat
// indices, `me` for the first and a plane apart each (common/gather_lanes4.wgsl).
fn arg_hits(e: u32, me: u32) -> vec4<bool> {
    let a = arg_load4(e);
    let plane = params.in_d * params.in_h * params.in_w;
    return vec4<u32>(a[0], a[1], a[2], a[3]) == me + vec4<u32>(0u, 1u, 2u, 3u) * plane;
}

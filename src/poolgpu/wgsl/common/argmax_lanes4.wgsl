// The argmaxes of four channels of one window (channels-last), and whether they are the
// four channels' own flat indices, `me` for the first and a plane apart each (and the
// window real), for the lanes of common/gather_lanes4.wgsl.
alias Arg = vec4<u32>;
fn arg_at(e: u32) -> Arg {
    let a = arg_load4(e);
    return vec4<u32>(a[0], a[1], a[2], a[3]);
}
fn hits(arg: Arg, me: u32, real: bool) -> vec4<bool> {
    let plane = params.in_d * params.in_h * params.in_w;
    return (arg == me + vec4<u32>(0u, 1u, 2u, 3u) * plane) & vec4<bool>(real);
}

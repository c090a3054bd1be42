// The stray winners of max_unpool_gather.wgsl's run of four along W (0 where its plane has
// no strays), in one 16-byte load and store (t a multiple of 4: poolgpu.kernels checks
// out_w is).  Reading the words resets them.
fn stray_winners(plane: u32, t: u32) -> vec4<u32> {
    if (flags_load(params.flags_base + plane) == 0u) { return vec4<u32>(0u); }
    return winner_take4(params.winner_base + t);
}

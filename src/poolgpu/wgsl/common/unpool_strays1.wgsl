// The stray winners of max_unpool_gather.wgsl's run, one word each (0 where its plane has no
// strays): output elements t, and along C those of the run's next RUN - 1 channels.  Reading a
// word resets it.
fn stray_winner(plane: u32, t: u32) -> u32 {
    if (flags_load(params.flags_base + plane) == 0u) { return 0u; }
    return winner_take(params.winner_base + t);
}

fn stray_winners(plane: u32, t: u32) -> vec4<u32> {
    var v = vec4<u32>(stray_winner(plane, t), 0u, 0u, 0u);
    if (ALONG_C && RUN > 1u) {
        let out_plane = params.out_d * params.out_h * params.out_w;
        v.y = stray_winner(plane + 1u, t + out_plane);
        v.z = stray_winner(plane + 2u, t + 2u * out_plane);
        v.w = stray_winner(plane + 3u, t + 3u * out_plane);
    }
    return v;
}

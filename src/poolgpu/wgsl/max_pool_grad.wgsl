// Max pooling gradient (DirectML MAX_POOLING_GRAD), pass 2 of 2: a gather.
//
// Pass 1 (max_pool.wgsl) wrote each window's argmax, a flat logical input index, into the
// scratch `arg` of the forward output's sizes (packed, or channels-last with dx).  Here one invocation owns a block of
// SD x SH x SW dx elements (common/windows_covering.wgsl; one
// along its element-block dimensions) and, for each, visits in a fixed
// order every window tap landing on it, adding that window's dy where the window's argmax
// is this element.  No atomics and a fixed summation order: the same inputs give
// bit-identical dx, run after run.  Sums are f32, one channel per invocation, or four
// over channels-last tensors (the lanes: common/gather_lanes*.wgsl, argmax_lanes*.wgsl).
//
// Tensors are seen as 5-D {N, C, D, H, W}; the window geometry arrives as override
// constants, so the loops unroll and the tap selection folds away.
//
// Prepended by poolgpu.kernels: the value type (Raw, to_f32, from_f32) and the tensors dy, arg
// and dx; library: block_of, block_element, first_tap and block_window
// (common/windows_covering.wgsl), the windows-first visit (common/windows_first.wgsl), Sum,
// dy_sum, dx_put, Arg, arg_at and hits (the lanes).

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let block = block_of(wg, lane);
    if (!block.inside) { return; }
    let bd = block.d;  let bh = block.h;  let bw = block.w;
    let nc = block.nc;  let n = block.n;  let c = block.c;

    let arg_plane = params.arg_base + n * params.arg_n + c * params.arg_c;
    let dy_plane = params.dy_base + n * params.dy_n + c * params.dy_c;
    let dx_plane = params.dx_base + n * params.dx_n + c * params.dx_c;
    if (WINDOWS_FIRST) {
        // (sums from 0 kept as written, as in the loops below: 0 + -0 is +0, which folding 0 + v to v loses)
        let zero = Sum(as_written(0.0));
        var sums = array<Sum, 8>(zero, zero, zero, zero, zero, zero, zero, zero);
        let first = BlockFirst(bd, bh, bw, first_element_index(nc, vec3<u32>(bd, bh, bw)));
        visit_windows(&sums, first, Reaching(arg_plane, dy_plane));
        store_block(&sums, first, dx_plane);
        return;
    }
    let along = part_along(block.part);
    for (var rd = block.first.x; rd < block.end.x; rd++) {
        let d = block_element(bd, rd, SD, PD, params.in_d);
        if (!d.inside) { continue; }
        for (var rh = block.first.y; rh < block.end.y; rh++) {
            let h = block_element(bh, rh, SH, PH, params.in_h);
            if (!h.inside) { continue; }
            for (var rw = block.first.z; rw < block.end.z; rw++) {
                let w = block_element(bw, rw, SW, PW, params.in_w);
                if (!w.inside) { continue; }
                let me = ((nc * params.in_d + d.at) * params.in_h + h.at) * params.in_w + w.at;  // as pass 1 wrote it
                var sum = Sum(as_written(0.0));
                let kds = tap_run(first_tap(rd, SD, TD, ID), TD, KD, bd, rd, SD, LD, PD, params.out_d, along.x, PARTS_D);
                for (var kd = kds.first; kd < kds.end; kd += tap_step(TD, KD)) {
                    let od = block_window(bd, rd, kd, SD, LD, PD, params.out_d);
                    if (!od.hit) { continue; }
                    let khs = tap_run(first_tap(rh, SH, TH, IH), TH, KH, bh, rh, SH, LH, PH, params.out_h, along.y, PARTS_H);
                    for (var kh = khs.first; kh < khs.end; kh += tap_step(TH, KH)) {
                        let oh = block_window(bh, rh, kh, SH, LH, PH, params.out_h);
                        if (!oh.hit) { continue; }
                        let kws = tap_run(first_tap(rw, SW, TW, IW), TW, KW, bw, rw, SW, LW, PW, params.out_w, along.z, PARTS_W);
                        for (var kw = kws.first; kw < kws.end; kw += tap_step(TW, KW)) {
                            let ow = block_window(bw, rw, kw, SW, LW, PW, params.out_w);
                            if (!ow.hit) { continue; }
                            // select, not a branch: both loads unconditional vectorise better
                            let hit = hits(arg_at(arg_plane + od.o * params.arg_d + oh.o * params.arg_h + ow.o * params.arg_w), me, true);
                            let dy = dy_sum(dy_plane + od.o * params.dy_d + oh.o * params.dy_h + ow.o * params.dy_w);
                            sum += select(Sum(0.0), dy, hit);
                        }
                    }
                }
                gather_put(dx_plane + d.at * params.dx_d + h.at * params.dx_h + w.at * params.dx_w, sum, me, block.part);
            }
        }
    }
}

// The windows-first visit's reads and taps (common/windows_first.wgsl).
struct Reaching { arg_plane: u32, dy_plane: u32 }
struct WindowOf { arg: Arg, dy: Sum, real: bool }
fn read_window(at: Reaching, od: u32, oh: u32, ow: u32, real: bool) -> WindowOf {
    return WindowOf(arg_at(at.arg_plane + od * params.arg_d + oh * params.arg_h + ow * params.arg_w),
                    dy_sum(at.dy_plane + od * params.dy_d + oh * params.dy_h + ow * params.dy_w), real);
}
fn add_tap(sums: ptr<function, array<Sum, 8>>, r: u32, window: WindowOf, me: u32) {
    (*sums)[r] += select(Sum(0.0), window.dy, hits(window.arg, me, window.real));
}

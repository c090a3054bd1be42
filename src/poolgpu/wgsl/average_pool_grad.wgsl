// Average pooling gradient (DirectML AVERAGE_POOLING_GRAD): a gather.
//
// One invocation owns a block of SD x SH x SW dx elements (common/windows_covering.wgsl; one
// along its element-block dimensions) and,
// for each, visits in a fixed order every window tap landing on it, adding that window's
// dy / divisor (the window's size when padding counts, else the
// number of input elements it covers).  No atomics and a fixed summation order: the same
// inputs give bit-identical dx, run after run.  Sums are f32, one channel per invocation,
// or four over channels-last tensors (the lanes: common/gather_lanes*.wgsl).
//
// Tensors are seen as 5-D {N, C, D, H, W}; the window geometry arrives as override
// constants, so the loops unroll and the tap selection folds away.
//
// Prepended by poolgpu.kernels: the value type (Raw, to_f32, from_f32) and the tensors dy and
// dx; library: block_of, block_element, first_tap and block_window
// (common/windows_covering.wgsl), the windows-first visit (common/windows_first.wgsl),
// divisor_taps (common/average_divisor.wgsl), Sum, dy_sum, dx_put and gather_put (the lanes).

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

// Windows that do not overlap, each held whole by its block (poolgpu.kernels: stride at
// least the dilated window everywhere, no element blocks, no parts): the block's own window's
// share is read once and written to every element a tap of it lands on, zero elsewhere.  The
// loops below would find that one tap for each such element: the same sums, 0 + share.
override DISJOINT: bool = false;

// dy's share of a window of `divisor` taps, rounded as in average_pool_grad_rows.wgsl: the
// divisor and the quotient are kept as written (common/as_written.wgsl), so no driver turns
// the division into a multiplication by a folded reciprocal, or fuses it into the sum.
fn share_of(dy: Sum, divisor: f32) -> Sum {
    let share = dy / divisor;
    return bitcast<Sum>(bitcast<SumBits>(share) | SumBits(params.opaque_zero));
}

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let block = block_of(wg, lane);
    if (!block.inside) { return; }
    let bd = block.d;  let bh = block.h;  let bw = block.w;
    let nc = block.nc;  let n = block.n;  let c = block.c;

    let dy_plane = params.dy_base + n * params.dy_n + c * params.dy_c;
    let dx_plane = params.dx_base + n * params.dx_n + c * params.dx_c;
    if (WINDOWS_FIRST) {
        // (sums from 0 kept as written, as in the loops below: 0 + -0 is +0, which folding 0 + v to v loses)
        let zero = Sum(as_written(0.0));
        var sums = array<Sum, 8>(zero, zero, zero, zero, zero, zero, zero, zero);
        let first = BlockFirst(bd, bh, bw, 0u);   // (no indices needed)
        visit_windows(&sums, first, Reaching(dy_plane));
        store_block(&sums, first, dx_plane);
        return;
    }
    if (DISJOINT) {
        // The block's own window starts where the block does: its tap k is block element k * dilation.
        let o = vec3<u32>(bd + PD / SD, bh + PH / SH, bw + PW / SW);
        // (the sum from 0 of the loops below, kept as written)
        var share = Sum(as_written(0.0));
        if (o.x < params.out_d && o.y < params.out_h && o.z < params.out_w) {
            let divisor = window_divisor(divisor_taps(o.x, KD, SD, LD, PD, params.in_d, ED),
                                         divisor_taps(o.y, KH, SH, LH, PH, params.in_h, EH),
                                         divisor_taps(o.z, KW, SW, LW, PW, params.in_w, EW));
            share += share_of(dy_sum(dy_plane + o.x * params.dy_d + o.y * params.dy_h + o.z * params.dy_w), divisor);
        }
        for (var rd = 0u; rd < SD; rd++) {
            let d = block_element(bd, rd, SD, PD, params.in_d);
            if (!d.inside) { continue; }
            for (var rh = 0u; rh < SH; rh++) {
                let h = block_element(bh, rh, SH, PH, params.in_h);
                if (!h.inside) { continue; }
                for (var rw = 0u; rw < SW; rw++) {
                    let w = block_element(bw, rw, SW, PW, params.in_w);
                    if (!w.inside) { continue; }
                    let on_tap = lands(rd, 0u, SD, LD, KD) && lands(rh, 0u, SH, LH, KH) && lands(rw, 0u, SW, LW, KW);
                    let me = ((nc * params.in_d + d.at) * params.in_h + h.at) * params.in_w + w.at;
                    gather_put(dx_plane + d.at * params.dx_d + h.at * params.dx_h + w.at * params.dx_w,
                               select(Sum(0.0), share, on_tap), me, 0u);
                }
            }
        }
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
                let me = ((nc * params.in_d + d.at) * params.in_h + h.at) * params.in_w + w.at;
                var sum = Sum(as_written(0.0));
                let kds = tap_run(first_tap(rd, SD, TD, ID), TD, KD, bd, rd, SD, LD, PD, params.out_d, along.x, PARTS_D);
                for (var kd = kds.first; kd < kds.end; kd += tap_step(TD, KD)) {
                    let od = block_window(bd, rd, kd, SD, LD, PD, params.out_d);
                    if (!od.hit) { continue; }
                    let count_d = divisor_taps(od.o, KD, SD, LD, PD, params.in_d, ED);
                    let khs = tap_run(first_tap(rh, SH, TH, IH), TH, KH, bh, rh, SH, LH, PH, params.out_h, along.y, PARTS_H);
                    for (var kh = khs.first; kh < khs.end; kh += tap_step(TH, KH)) {
                        let oh = block_window(bh, rh, kh, SH, LH, PH, params.out_h);
                        if (!oh.hit) { continue; }
                        let count_h = divisor_taps(oh.o, KH, SH, LH, PH, params.in_h, EH);
                        let kws = tap_run(first_tap(rw, SW, TW, IW), TW, KW, bw, rw, SW, LW, PW, params.out_w, along.z, PARTS_W);
                        for (var kw = kws.first; kw < kws.end; kw += tap_step(TW, KW)) {
                            let ow = block_window(bw, rw, kw, SW, LW, PW, params.out_w);
                            if (!ow.hit) { continue; }
                            let divisor = window_divisor(count_d, count_h, divisor_taps(ow.o, KW, SW, LW, PW, params.in_w, EW));
                            sum += share_of(dy_sum(dy_plane + od.o * params.dy_d + oh.o * params.dy_h + ow.o * params.dy_w), divisor);
                        }
                    }
                }
                gather_put(dx_plane + d.at * params.dx_d + h.at * params.dx_h + w.at * params.dx_w, sum, me, block.part);
            }
        }
    }
}

// The windows-first visit's reads and taps (common/windows_first.wgsl): each window's share
// computed once, for every element it covers.
struct Reaching { dy_plane: u32 }
struct WindowOf { share: Sum }
fn read_window(at: Reaching, od: u32, oh: u32, ow: u32, real: bool) -> WindowOf {
    let divisor = window_divisor(divisor_taps(od, KD, SD, LD, PD, params.in_d, ED),
                                 divisor_taps(oh, KH, SH, LH, PH, params.in_h, EH), divisor_taps(ow, KW, SW, LW, PW, params.in_w, EW));
    let share = share_of(dy_sum(at.dy_plane + od * params.dy_d + oh * params.dy_h + ow * params.dy_w), divisor);
    return WindowOf(select(Sum(0.0), share, real));   // (+0 added to a sum from +0 changes no bit)
}
fn add_tap(sums: ptr<function, array<Sum, 8>>, r: u32, window: WindowOf, me: u32) {
    (*sums)[r] += window.share;
}

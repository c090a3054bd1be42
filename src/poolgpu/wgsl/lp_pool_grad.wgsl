// Lp pooling gradient, pass 2 of 2: a gather.
//
// Pass 1 (lp_pool.wgsl) wrote each window's result y = (sum |x|^p)^(1/p) into the scratch `y`
// of the forward output's sizes.  d y / d x = sign(x) * (|x| / y)^(p - 1), 0 where y is 0 (a
// window of zeros).  Here one invocation owns a block of SD x SH x SW dx elements
// (common/windows_covering.wgsl; one along its element-block dimensions) and, for each, visits
// in a fixed order every window tap landing on it, adding dy * (|x| / y)^(p - 1) of that
// window; the sign comes last (0 for a zero, NaN for a NaN x; common/lp_derivative.wgsl).
// No atomics and a fixed summation order: the same inputs give bit-identical dx, run after
// run.  Sums are f32, one channel per invocation (common/gather_lanes1.wgsl).
//
// Prepended by poolgpu.kernels: the value type (Raw, to_f32, magnitude_f32, from_f32) and the
// tensors x, y, dy and dx; library: block_of, block_element, first_tap and block_window
// (common/windows_covering.wgsl), general_power (lp_power.wgsl), lp_factor and sign_factor
// (lp_derivative.wgsl), Sum, dy_sum, gather_put.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

override P: f32 = 2.0;

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let block = block_of(wg, lane);
    if (!block.inside) { return; }
    let bd = block.d;  let bh = block.h;  let bw = block.w;
    let nc = block.nc;  let n = block.n;  let c = block.c;

    let x_plane = params.x_base + n * params.x_n + c * params.x_c;
    let y_plane = params.y_base + n * params.y_n + c * params.y_c;
    let dy_plane = params.dy_base + n * params.dy_n + c * params.dy_c;
    let dx_plane = params.dx_base + n * params.dx_n + c * params.dx_c;
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
                let x = x_load(x_plane + d.at * params.x_d + h.at * params.x_h + w.at * params.x_w);
                let m = magnitude_f32(x);
                var sum = Sum(0.0);
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
                            let y = to_f32(y_load(y_plane + od.o * params.y_d + oh.o * params.y_h + ow.o * params.y_w));
                            let dy = dy_sum(dy_plane + od.o * params.dy_d + oh.o * params.dy_h + ow.o * params.dy_w);
                            sum += dy * lp_factor(m, y);
                        }
                    }
                }
                gather_put(dx_plane + d.at * params.dx_d + h.at * params.dx_h + w.at * params.dx_w,
                           sum * sign_factor(to_f32(x)), me, block.part);
            }
        }
    }
}

// Lp pooling gradient where windows do not overlap (stride >= dilated extent in every
// dimension): one pass, no scratch (Tuning.lp_gradient_one_pass).  Appended to lp_pool.wgsl,
// whose accumulator it feeds.
//
// Every dx element lies in at most one window: one invocation owns a block of SD x SH x SW dx
// elements (common/windows_covering.wgsl) holding all of its window (if the window exists),
// computes the window's y = (sum |x|^p)^(1/p) as the forward walks do (the same taps in the
// same order, rounded to the input's type), then writes each block element the two passes'
// value: (0 + dy * (|x| / y)^(p - 1)) * sign(x) on the window's taps, 0 * sign(x) elsewhere
// (common/lp_derivative.wgsl).  The same bits as lp_pool.wgsl then lp_pool_grad.wgsl, without
// writing y and reading it back.
//
// Prepended by poolgpu.kernels: the value type (Raw, to_f32, magnitude_f32, from_f32) and the
// tensors x, dy and dx; library: CompensatedSum (compensated_sum.wgsl), as_written, general_power
// (lp_power.wgsl), lp_factor and sign_factor (lp_derivative.wgsl), block_of, block_element
// (windows_covering.wgsl).

// (common/window_geometry.wgsl's output coordinates: the accumulators' interface names them)
struct Out { n: u32, c: u32, d: u32, h: u32, w: u32 }

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let block = block_of(wg, lane);
    if (!block.inside) { return; }
    let bd = block.d;  let bh = block.h;  let bw = block.w;
    let n = block.n;  let c = block.c;

    // The block's own window o starts where the block does: tap k is block element k * dilation.
    let o = vec3<u32>(bd + PD / SD, bh + PH / SH, bw + PW / SW);
    let has_window = o.x < params.out_d && o.y < params.out_h && o.z < params.out_w;
    let x_plane = params.x_base + n * params.x_n + c * params.x_c;
    var acc = acc_new();
    for (var kd = 0u; kd < KD; kd++) {
        let d = block_element(bd, kd * LD, SD, PD, params.in_d);
        for (var kh = 0u; kh < KH; kh++) {
            let h = block_element(bh, kh * LH, SH, PH, params.in_h);
            for (var kw = 0u; kw < KW; kw++) {
                let w = block_element(bw, kw * LW, SW, PW, params.in_w);
                let inside = d.inside && h.inside && w.inside;
                let raw = x_load(x_plane + select(0u, d.at * params.x_d + h.at * params.x_h + w.at * params.x_w, inside));
                acc = acc_add(acc, tap_of(raw), 0u, inside);
            }
        }
    }
    var at: Out;   // (unused by Lp's acc_value)
    let y = to_f32(acc_value(acc, at));
    let dy = to_f32(dy_load(params.dy_base + n * params.dy_n + c * params.dy_c
                            + select(0u, o.x * params.dy_d + o.y * params.dy_h + o.z * params.dy_w, has_window)));

    let dx_plane = params.dx_base + n * params.dx_n + c * params.dx_c;
    for (var rd = 0u; rd < SD; rd++) {
        let d = block_element(bd, rd, SD, PD, params.in_d);
        if (!d.inside) { continue; }
        for (var rh = 0u; rh < SH; rh++) {
            let h = block_element(bh, rh, SH, PH, params.in_h);
            if (!h.inside) { continue; }
            for (var rw = 0u; rw < SW; rw++) {
                let w = block_element(bw, rw, SW, PW, params.in_w);
                if (!w.inside) { continue; }
                let x = x_load(x_plane + d.at * params.x_d + h.at * params.x_h + w.at * params.x_w);
                let tap = has_window && rd % LD == 0u && rd / LD < KD && rh % LH == 0u && rh / LH < KH
                          && rw % LW == 0u && rw / LW < KW;
                // (the gather's sum from 0, kept: 0 + -0 is +0, which folding 0 + v to v loses)
                var sum = as_written(0.0);
                if (tap) { sum += dy * lp_factor(magnitude_f32(x), y); }
                dx_store(dx_plane + d.at * params.dx_d + h.at * params.dx_h + w.at * params.dx_w,
                         from_f32(sum * sign_factor(to_f32(x))));
            }
        }
    }
}

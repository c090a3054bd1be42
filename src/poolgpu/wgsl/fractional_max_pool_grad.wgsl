// Fractional max pooling gradient: a gather over dx, after the fractional walk
// (fractional_max_pool.wgsl) has written each window's argmax (the forward rule) into the
// scratch `arg`.  Each dx element sums, in increasing (od, oh, ow) order, the dy of the
// windows covering it whose argmax it is: no atomics and a fixed order, so the same inputs
// give the same bits run after run (and the bits of the binary-search gather it replaces).
// The runs of windows covering an element come from the window table (fractional_table.wgsl
// with COVERS): two loads per dimension, no search.  The sum is f32 (FLOAT16 and BFLOAT16
// rounded once at the end).
//
// The grid (common/grid.wgsl) is (column, line, plane) = (w / RUN, h / ROWS, (n, c, d)):
// neighbouring lanes on neighbouring dx elements.  An invocation sums RUN elements along W of
// ROWS rows (1 x 1, or 4 along W of 1 to 4 rows, over the windows covering any of them, each
// window's argmax read once for all of them; its element's sums written out).  Four rows:
// lavapipe, case FR, 0.55-0.7x the time of one (fewer table loads, and each window read
// once where the rows' windows overlap).
//
// Prepended by poolgpu.kernels: the value type (to_f32, from_f32) and the tensors dy (dy_load),
// arg (arg_load), bins (bins_load: the window table) and dx; appended: divide.wgsl, grid.wgsl,
// and the store (fractional_grad_store1.wgsl or fractional_grad_store4.wgsl).

override RUN: u32 = 1u;   // dx elements per invocation: 1 or 4
override ROWS: u32 = 1u;  // dx rows per invocation: 1 to 4 (RUN 4)
// At most COVER_D x COVER_H x COVER_W windows cover an invocation's elements (poolgpu.kernels
// bounds them from alpha and the samples' rounding: the loops' declarations rest on it).
override COVER_D: u32 = 1u;
override COVER_H: u32 = 1u;
override COVER_W: u32 = 1u;

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

fn padded(v: u32) -> u32 { return (v + 3u) & ~3u; }

// The windows [first, end) covering input coordinates i .. i + span - 1 along a dimension of
// `size` inputs, whose firsts the table row holds from word `at` (and the ends after them),
// at most `most` of them.
fn covering(at: u32, size: u32, i: u32, span: u32, most: u32) -> vec2<u32> {
    let first = bins_load(at + i);
    return vec2<u32>(first, min(bins_load(at + padded(size) + i + span - 1u), first + most));
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let pos = grid_position(wg, lid);
    if (pos.x >= params.columns) { return; }
    let w = RUN * pos.x;
    let h = ROWS * pos.y;
    // the plane: uniform across a workgroup (common/grid.wgsl), divided by multiply-high
    let nc = divide(pos.z, params.in_d, params.in_d_magic, params.in_d_shift);
    let d = pos.z - nc * params.in_d;
    let n = divide(nc, params.channels, params.channels_magic, params.channels_shift);
    let c = nc - n * params.channels;
    let table = params.bins_base + nc * params.row_words;
    let rows = min(ROWS, params.in_h - h);   // (the plane's last rows)
    let ds = covering(table + params.covers_d, params.in_d, d, 1u, COVER_D);
    let hs = covering(table + params.covers_h, params.in_h, h, rows, COVER_H);
    let ws = covering(table + params.covers_w, params.in_w, w, RUN, COVER_W);
    let e = ((nc * params.in_d + d) * params.in_h + h) * params.in_w + w;   // (the run's first element)
    let dy_plane = params.dy_base + n * params.dy_n + c * params.dy_c;
    let arg_plane = params.arg_base + n * params.arg_n + c * params.arg_c;
    var sums0 = vec4<f32>(0.0);
    var sums1 = vec4<f32>(0.0);
    var sums2 = vec4<f32>(0.0);
    var sums3 = vec4<f32>(0.0);
    let lanes = vec4<u32>(0u, 1u, 2u, 3u);
    let row = params.in_w;
    for (var od = ds.x; od < ds.y; od++) {
        for (var oh = hs.x; oh < hs.y; oh++) {
            for (var ow = ws.x; ow < ws.y; ow++) {
                let argmax = arg_load(arg_plane + od * params.arg_d + oh * params.arg_h + ow * params.arg_w);
                let a0 = argmax - e;
                let a1 = a0 - row;
                let a2 = a1 - row;
                let a3 = a2 - row;
                if (a0 < RUN || (ROWS > 1u && a1 < RUN) || (ROWS > 2u && a2 < RUN) || (ROWS > 3u && a3 < RUN)) {
                    let v = vec4<f32>(to_f32(dy_load(dy_plane + od * params.dy_d + oh * params.dy_h + ow * params.dy_w)));
                    sums0 = select(sums0, sums0 + v, vec4<u32>(a0) == lanes);
                    if (ROWS > 1u) { sums1 = select(sums1, sums1 + v, vec4<u32>(a1) == lanes); }
                    if (ROWS > 2u) { sums2 = select(sums2, sums2 + v, vec4<u32>(a2) == lanes); }
                    if (ROWS > 3u) { sums3 = select(sums3, sums3 + v, vec4<u32>(a3) == lanes); }
                }
            }
        }
    }
    let at = params.dx_base + n * params.dx_n + c * params.dx_c + d * params.dx_d + h * params.dx_h + w * params.dx_w;
    store_sums(at, w, sums0);
    if (rows > 1u) { store_sums(at + params.dx_h, w, sums1); }
    if (rows > 2u) { store_sums(at + 2u * params.dx_h, w, sums2); }
    if (rows > 3u) { store_sums(at + 3u * params.dx_h, w, sums3); }
}

// Max pooling gradient (DirectML MAX_POOLING_GRAD), pass 2 of 2 when dx, dy and the argmax
// are contiguous along W: the gather of max_pool_grad.wgsl, 2 x 8 dx elements per
// invocation from 4-element chunks of dy and the argmax (see common/gather_rows.wgsl).
// Each dx element sums, in a fixed order, the dy of the windows whose argmax (written by
// pass 1 into the packed scratch `arg`) is that element.
//
// Prepended by poolgpu.kernels: the value type (Raw, to_f32, from_f32) and the tensors
// dy (dy_load4), arg (arg_load4) and dx; library: grid.wgsl, gather_rows.wgsl and its
// store_eight (gather_rows_store4.wgsl or gather_rows_store_any.wgsl).

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

// What the gathers need of one window row (see common/gather_rows.wgsl).
struct WindowRow {
    arg: u32, dy: u32,          // the row's first argmax and dy element
    w0: u32, last_chunk: i32,   // the invocation's first dx column; the row's last chunk
    me: u32,                    // the flat index of dx element (h0, w0), as pass 1 wrote argmaxes
    in_first: bool, in_second: bool,   // whether its windows reach dx row h0, h0 + 1
}

struct Chunk { arg: vec4<u32>, dy: array<Raw, 4> }
fn load_chunk(row: WindowRow, j: u32) -> Chunk {
    let place = chunk_place(row.w0, j, row.last_chunk);
    // a column outside the row is no window: its argmax matches nothing
    let a = arg_load4(row.arg + place.at);
    return Chunk(select(vec4<u32>(0xffffffffu), vec4<u32>(a[0], a[1], a[2], a[3]), columns_in_row(place)),
                 dy_load4(row.dy + place.at));
}

// Window column k of the chunk: its dy added to whichever of the dx elements it reaches is its argmax.
fn gather_column(sums: Sixteen, row: WindowRow, chunk: Chunk, j: u32, k: u32) -> Sixteen {
    let reach = columns_reached(j, k);
    let dy = to_f32(chunk.dy[k]);
    var s = sums;
    // (uniform branches: the same for every lane along W, skipping a row the window row misses)
    if (row.in_first) { s.first = add_argmax(s.first, chunk.arg[k], dy, row.me, reach); }
    if (row.in_second) { s.second = add_argmax(s.second, chunk.arg[k], dy, row.me + params.in_w, reach); }
    return s;
}

fn add_argmax(sums: Eight, arg: u32, dy: f32, me: u32, reach: Reach) -> Eight {
    let at = vec4<u32>(arg - me);   // the argmax's place from w0 (wrapping: huge when before)
    return add_where(sums, dy, (at == vec4<u32>(0u, 1u, 2u, 3u)) & reach.lo, (at == vec4<u32>(4u, 5u, 6u, 7u)) & reach.hi);
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let block = dx_block(wg, lid);
    if (!block.inside) { return; }
    let n = block.n;  let c = block.c;  let nc = block.nc;
    let d = block.d;  let h0 = block.h0;  let w0 = block.w0;

    let me = ((nc * params.in_d + d) * params.in_h + h0) * params.in_w + w0;  // as pass 1 wrote it
    let last_chunk = dy_last_chunk();
    let last_row = last_window_row(h0);
    // (sums from 0 kept as written: 0 + -0 is +0, which folding 0 + v to v loses)
    let zero = Eight(vec4<f32>(as_written(0.0)), vec4<f32>(as_written(0.0)));
    var sums = Sixteen(zero, zero);
    for (var kd = 0u; kd < KD; kd++) {
        let od = window_of(d, kd, SD, LD, PD, params.out_d);
        if (!od.hit) { continue; }
        for (var i = 0; i < i32(OH_ROWS); i++) {
            let oh = last_row - i;
            if (oh < 0 || oh >= i32(params.out_h)) { continue; }
            let arg_row = params.arg_base + ((nc * params.out_d + od.o) * params.out_h + u32(oh)) * params.out_w;
            let dy_row = params.dy_base + n * params.dy_n + c * params.dy_c + od.o * params.dy_d + u32(oh) * params.dy_h;
            sums = visit_chunks(sums, WindowRow(arg_row, dy_row, w0, last_chunk, me,
                                                covers_row(u32(oh), h0), covers_row(u32(oh), h0 + 1u)));
        }
    }
    store_sixteen(params.dx_base + n * params.dx_n + c * params.dx_c + d * params.dx_d + h0 * params.dx_h,
                  params.dx_h, h0, w0, sums);
}

// Max unpooling (DirectML MAX_UNPOOLING), after max_unpool_winners.wgsl: write every output
// element (outputs that are not dense; dense ones take max_unpool_scatter.wgsl).
//
// Per output element e (flat logical index): winner[e] (from max_unpool_winners.wgsl) is j + 1 for the input
// element j that lands there, or 0 for none.  The element gets x[j]'s raw bits (any of the
// ten types) or the type's zero.  The pass also resets the winners to 0, so the scratch
// (zero-filled when allocated) is clean for the next call without a clearing pass.  One of
// two walks appended by poolgpu.kernels runs it: common/unpool_walk.wgsl (one element per
// invocation, any strides) or common/unpool_walk_rows.wgsl (four along W).
//
// Prepended by poolgpu.kernels: the value type (Raw) and the tensors x (x_load), winner
// (winner_take) and y (y_store).

override PACKED_INPUT: bool = false;   // x packed: its element offset is the flat index

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

// The value unpooled to an output element whose winner word is `winner`.
fn unpooled(winner: u32) -> Raw {
    if (winner == 0u) { return Raw(); }
    let j = winner - 1u;  // the input element's flat logical index
    if (PACKED_INPUT) { return x_load(params.x_base + j); }
    // j's coordinates: one division per dimension, each remainder by a multiply-subtract
    // (integer division is slow on SIMD CPUs: 3 divisions for 2-D, not 7, made channels-last
    // unpooling 1.15x faster on lavapipe)
    let rows = j / params.in_w;      // (n, c, d, h)
    let w = j - rows * params.in_w;
    let planes = rows / params.in_h;  // (n, c, d)
    let h = rows - planes * params.in_h;
    var nc = planes;
    var d = 0u;
    if (params.in_d != 1u) {
        nc = planes / params.in_d;
        d = planes - nc * params.in_d;
    }
    let n = nc / params.channels;
    return x_load(params.x_base + n * params.x_n + (nc - n * params.channels) * params.x_c
                  + d * params.x_d + h * params.x_h + w * params.x_w);
}

// The offset of output element (n, c, od, oh, ow) in y, and its flat logical index.
fn y_offset(nc: u32, od: u32, oh: u32, ow: u32) -> u32 {
    let n = nc / params.channels;
    return params.y_base + n * params.y_n + (nc - n * params.channels) * params.y_c
           + od * params.y_d + oh * params.y_h + ow * params.y_w;
}
fn flat_output(nc: u32, od: u32, oh: u32, ow: u32) -> u32 {
    return ((nc * params.out_d + od) * params.out_h + oh) * params.out_w + ow;
}

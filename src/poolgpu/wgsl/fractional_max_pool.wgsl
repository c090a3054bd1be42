// Fractional max pooling: a walk over each output's window (fixed WINDOW_D x WINDOW_H x
// WINDOW_W, placed per (n, c) plane by the window table of fractional_table.wgsl), feeding its
// taps in increasing flat index to the max rule's accumulator (common/max_accumulator.wgsl):
// the first maximum, the first NaN, the winner's bits and flat logical index.
//
// The grid (common/grid.wgsl) is (column, line, plane) = (ow / RUN, oh, (n, c, od)):
// neighbouring lanes on neighbouring outputs, whose windows are neighbours too.  The walk of
// an invocation's RUN outputs: common/fractional_walk1.wgsl (one output, its taps loaded one
// by one: any strides) or fractional_walk4.wgsl (four outputs along W, their taps likewise).
//
// Prepended by poolgpu.kernels: the value type (Raw, keys) and the tensors x, bins (the window
// table: bins_load, bins_load4), y and idx (absent where not asked for); appended:
// max_accumulator.wgsl, divide.wgsl, grid.wgsl, window_constants.wgsl and window_geometry.wgsl
// (Out, y_offset, idx_offset), store_one.wgsl, the walk and its stores.

override WINDOW_D: u32 = 1u;
override WINDOW_H: u32 = 1u;
override WINDOW_W: u32 = 1u;

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

fn acc_value(acc: Acc, at: Out) -> Raw { return acc.raw; }
fn acc_index(acc: Acc) -> u32 { return acc.index; }

// Where a run of outputs pools: its first output, the (n, c) plane's row of the window table,
// the plane's x offset and flat logical index, and the windows' first input plane and row.
struct Run { at: Out, table: u32, x_plane: u32, e_plane: u32, d0: u32, h0: u32 }

// The x offset and flat logical index of column 0 of the input row (d0 + kd, h0 + kh).
fn row_x(r: Run, kd: u32, kh: u32) -> u32 { return r.x_plane + (r.d0 + kd) * params.x_d + (r.h0 + kh) * params.x_h; }
fn row_e(r: Run, kd: u32, kh: u32) -> u32 {
    return ((r.e_plane + r.d0 + kd) * params.in_h + r.h0 + kh) * params.in_w;
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let pos = grid_position(wg, lid);
    if (pos.x >= params.columns) { return; }
    // the plane: uniform across a workgroup (common/grid.wgsl), divided by multiply-high
    let nc = divide(pos.z, params.out_d, params.out_d_magic, params.out_d_shift);
    let od = pos.z - nc * params.out_d;
    let n = divide(nc, params.channels, params.channels_magic, params.channels_shift);
    let c = nc - n * params.channels;
    let table = params.bins_base + nc * params.row_words;
    pool_run(Run(Out(n, c, od, pos.y, RUN * pos.x), table, params.x_base + n * params.x_n + c * params.x_c,
                 nc * params.in_d, bins_load(table + od), bins_load(table + params.starts_h + pos.y)));
}

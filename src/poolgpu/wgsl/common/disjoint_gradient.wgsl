// The uniforms of the one-pass max gradients of disjoint windows (max_pool_grad_disjoint.wgsl,
// max_pool_grad_disjoint_rows.wgsl).

override WG_X: u32 = 64u;

struct Params {
    x_base: u32, dy_base: u32, dx_base: u32,
    channels: u32,
    in_d: u32, in_h: u32, in_w: u32,      // the forward input's (x's, dx's) spatial sizes
    out_d: u32, out_h: u32, out_w: u32,   // the forward output's (dy's)
    blocks_d: u32, blocks_h: u32, blocks_w: u32,
    // divide() of common/divide.wgsl by blocks_d, blocks_h, blocks_w and channels (block_of)
    blocks_d_magic: u32, blocks_d_shift: u32, blocks_h_magic: u32, blocks_h_shift: u32,
    blocks_w_magic: u32, blocks_w_shift: u32, channels_magic: u32, channels_shift: u32,
    x_n: u32, x_c: u32, x_d: u32, x_h: u32, x_w: u32,
    dy_n: u32, dy_c: u32, dy_d: u32, dy_h: u32, dy_w: u32,
    dx_n: u32, dx_c: u32, dx_d: u32, dx_h: u32, dx_w: u32,
    // rows of blocks_w blocks, N * C * blocks_d * blocks_h in all (common/row_grid.wgsl)
    column_groups: u32, rows: u32, row_origin: u32,
}
@group(0) @binding(0) var<uniform> params: Params;

// Gathers over pooling windows (the gradients).  An invocation owns a *block* of dx
// elements: along each dimension, `stride` consecutive positions b * stride + r - pad % stride
// (r < stride), so that every tap k of a window lands on block element r for exactly the
// windows o = b + pad / stride - (k * dilation - r) / stride, whenever stride divides
// k * dilation - r: for k = first_tap(r) + j * step, step = stride / gcd(dilation, stride).
// So each block visits exactly the window taps that land on it, no search.

// The tap steps of first_tap along D, H, W and their inverses (poolgpu.kernels's tap_steps).
override TD: u32 = 1u;  override TH: u32 = 1u;  override TW: u32 = 1u;
override ID: u32 = 0u;  override IH: u32 = 0u;  override IW: u32 = 0u;

// Block element r of block b along one dimension: its position and whether it is inside [0, size).
struct Position { at: u32, inside: bool }
fn block_element(b: u32, r: u32, stride: u32, pad: u32, size: u32) -> Position {
    let p = i32(b * stride + r) - i32(pad % stride);
    return Position(u32(p), p >= 0 && p < i32(size));
}

// The first tap k landing on block element r: the least k with k * dilation = r (mod stride),
// i.e. (r / g) * inverse mod step, where g = gcd(dilation, stride), step = stride / g and
// inverse = (dilation / g)^-1 mod step; none (0xffffffff) unless g divides r.
fn first_tap(r: u32, stride: u32, step: u32, inverse: u32) -> u32 {
    let g = stride / step;
    return select(0xffffffffu, (r / g) * inverse % step, r % g == 0u);
}

// The window whose tap k (from first_tap) lands on block element r of block b, and whether
// it exists (0 <= o < count).
struct Window { o: u32, hit: bool }
fn block_window(b: u32, r: u32, k: u32, stride: u32, dilation: u32, pad: u32, count: u32) -> Window {
    let o = i32(b + pad / stride) - i32((k * dilation - r) / stride);
    return Window(u32(o), o >= 0 && o < i32(count));
}

// The block this invocation owns in the grid of common/row_grid.wgsl: its coordinates and
// its plane nc = n * C + c; `inside` false past the grid's end.  Rows of blocks along W,
// one row per (n, c, bd, bh); or, with CHANNEL_LANES (channels-last dx: neighbouring lanes
// then touch neighbouring elements), rows of channels (of CHANNELS_PER_LANE channels from c
// on), one row per (n, bd, bh, bw).  Reads the Params fields blocks_d, blocks_h, blocks_w
// and channels, and their divide() constants (common/divide.wgsl: a lane's row is split
// by multiplies and shifts; with integer divisions, which lavapipe runs lane by lane, the
// gradients of cases A and B were 1.07-1.12x slower).
override CHANNEL_LANES: bool = false;
override CHANNELS_PER_LANE: u32 = 1u;
struct Block { d: u32, h: u32, w: u32, nc: u32, n: u32, c: u32, inside: bool }
fn block_of(wg: vec3<u32>, lane: u32) -> Block {
    let at = row_position(wg, lane);
    if (CHANNEL_LANES) {
        let bhw = divide(at.row, params.blocks_w, params.blocks_w_magic, params.blocks_w_shift);
        let bdh = divide(bhw, params.blocks_h, params.blocks_h_magic, params.blocks_h_shift);
        let n = divide(bdh, params.blocks_d, params.blocks_d_magic, params.blocks_d_shift);
        let c = at.column * CHANNELS_PER_LANE;
        return Block(bdh - n * params.blocks_d, bhw - bdh * params.blocks_h, at.row - bhw * params.blocks_w,
                     n * params.channels + c, n, c, at.inside && c < params.channels);
    }
    let bdc = divide(at.row, params.blocks_h, params.blocks_h_magic, params.blocks_h_shift);
    let nc = divide(bdc, params.blocks_d, params.blocks_d_magic, params.blocks_d_shift);
    let n = divide(nc, params.channels, params.channels_magic, params.channels_shift);
    return Block(bdc - nc * params.blocks_d, at.row - bdc * params.blocks_h, at.column,
                 nc, n, nc - n * params.channels, at.inside && at.column < params.blocks_w);
}

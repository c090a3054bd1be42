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
    if (step > 65536u) {   // (a constant branch) the product below would pass 2^32 - 1
        return select(0xffffffffu, times_mod(r / g, inverse, step), r % g == 0u);
    }
    return select(0xffffffffu, (r / g) * inverse % step, r % g == 0u);
}

// The tap loops' step from one tap landing on an element to the next: `step`, or where no
// second tap can land (step >= taps), `taps`, so that the tap past the last stays below 2^32.
fn tap_step(step: u32, taps: u32) -> u32 { return min(step, taps); }

// A split gather's part `part` along D, H and W.
fn part_along(part: u32) -> vec3<u32> {
    return vec3<u32>(part / (PARTS_W * PARTS_H), (part / PARTS_W) % PARTS_H, part % PARTS_W);
}

// The taps [first, end) a tap loop visits along a dimension of `taps` taps, from tap `first`
// (first_tap's) every tap_step: all of them, or with `parts` > 1, part `part` of them (the
// loop's k < end then stops where the part does).
struct TapRun { first: u32, end: u32 }
fn tap_run(first: u32, step: u32, taps: u32, part: u32, parts: u32) -> TapRun {
    if (parts == 1u) { return TapRun(first, taps); }
    if (first >= taps) { return TapRun(first, first); }
    let s = tap_step(step, taps);
    let landing = taps_part(Taps(0u, (taps - first + s - 1u) / s), part, parts);
    return TapRun(first + landing.first * s, first + landing.end * s);
}

// a * b mod m for a, b < m, exactly in u32: doubling and adding, each sum reduced mod m.
fn times_mod(a: u32, b: u32, m: u32) -> u32 {
    var product = 0u;
    for (var bit = 31i; bit >= 0i; bit--) {
        product = plus_mod(product, product, m);
        if (((b >> u32(bit)) & 1u) == 1u) { product = plus_mod(product, a, m); }
    }
    return product;
}

// x + y mod m for x, y < m (x + y may pass 2^32 - 1: the wrapped sum minus m is then right).
fn plus_mod(x: u32, y: u32, m: u32) -> u32 {
    let sum = x + y;
    return select(sum, sum - m, sum < x || sum >= m);
}

// The window whose tap k (from first_tap) lands on block element r of block b, and whether
// it exists (0 <= o < count).
struct Window { o: u32, hit: bool }
fn block_window(b: u32, r: u32, k: u32, stride: u32, dilation: u32, pad: u32, count: u32) -> Window {
    let o = i32(b + pad / stride) - i32((k * dilation - r) / stride);
    return Window(u32(o), o >= 0 && o < i32(count));
}

// Element blocks: along a dimension where BY_ELEMENT_{D,H,W} (poolgpu.kernels: where stride-long blocks
// would hold too many elements for one invocation, e.g. strides far beyond the input, whose
// blocks are mostly outside it), the grid counts dx elements p, not blocks, and an invocation
// visits the one block element p is: block (p + pad % stride) / stride, element r =
// (p + pad % stride) % stride (both exact in u32: p + pad is below 2^31).  Elsewhere it visits
// all the block's elements r in [0, stride).
override BY_ELEMENT_D: bool = false;  override BY_ELEMENT_H: bool = false;
override BY_ELEMENT_W: bool = false;

// The block this invocation owns in the grid of common/row_grid.wgsl: its coordinates, the
// block elements it visits ([first, end) along D, H, W) and
// its plane nc = n * C + c; `inside` false past the grid's end.  Rows of blocks along W,
// one row per (n, c, bd, bh); or, with CHANNEL_LANES (channels-last dx: neighbouring lanes
// then touch neighbouring elements), rows of channels (of CHANNELS_PER_LANE channels from c
// on), one row per (n, bd, bh, bw).  Reads the Params fields blocks_d, blocks_h, blocks_w
// and channels, and their divide() constants (common/divide.wgsl: a lane's row is split
// by multiplies and shifts; with integer divisions, which lavapipe runs lane by lane, the
// gradients of cases A and B were 1.07-1.12x slower).
override CHANNEL_LANES: bool = false;
override CHANNELS_PER_LANE: u32 = 1u;

// Split gathers (poolgpu.kernels.gradients: more taps land on an element than one invocation
// may visit; then element blocks along every dimension): the taps landing on an element are
// cut into PARTS_D x PARTS_H x PARTS_W parts (PARTS of them; rows of the grid numbered
// (row, part)), one invocation sums one part and saves it into tensor `part` (one word for
// each of a dx element's PARTS parts, elements numbered flat over dx's logical order) for
// the merge pass (window_walk_merge.wgsl over common/gradient_sum.wgsl).
override PARTS_D: u32 = 1u;
override PARTS_H: u32 = 1u;
override PARTS_W: u32 = 1u;
override PARTS: u32 = 1u;   // their product (computed by poolgpu.kernels)

struct Block { d: u32, h: u32, w: u32, nc: u32, n: u32, c: u32, inside: bool, first: vec3<u32>, end: vec3<u32>,
               part: u32 }
fn block_of(wg: vec3<u32>, lane: u32) -> Block {
    var at = row_position(wg, lane);
    let part = at.row % PARTS;
    at.row /= PARTS;
    if (CHANNEL_LANES) {
        let bhw = divide(at.row, params.blocks_w, params.blocks_w_magic, params.blocks_w_shift);
        let bdh = divide(bhw, params.blocks_h, params.blocks_h_magic, params.blocks_h_shift);
        let n = divide(bdh, params.blocks_d, params.blocks_d_magic, params.blocks_d_shift);
        let c = at.column * CHANNELS_PER_LANE;
        return element_blocks(Block(bdh - n * params.blocks_d, bhw - bdh * params.blocks_h,
                                    at.row - bhw * params.blocks_w, n * params.channels + c, n, c,
                                    at.inside && c < params.channels,
                                    vec3<u32>(0u), vec3<u32>(SD, SH, SW), part));
    }
    let bdc = divide(at.row, params.blocks_h, params.blocks_h_magic, params.blocks_h_shift);
    let nc = divide(bdc, params.blocks_d, params.blocks_d_magic, params.blocks_d_shift);
    let n = divide(nc, params.channels, params.channels_magic, params.channels_shift);
    return element_blocks(Block(bdc - nc * params.blocks_d, at.row - bdc * params.blocks_h, at.column,
                                nc, n, nc - n * params.channels, at.inside && at.column < params.blocks_w,
                                vec3<u32>(0u), vec3<u32>(SD, SH, SW), part));
}

// `block` with its coordinates along the element-block dimensions (dx positions there) turned
// into the block and the one element visited (a constant no-op without element blocks).
fn element_blocks(block: Block) -> Block {
    var b = block;
    if (BY_ELEMENT_D) { let q = b.d + PD % SD;  b.d = q / SD;  b.first.x = q % SD;  b.end.x = b.first.x + 1u; }
    if (BY_ELEMENT_H) { let q = b.h + PH % SH;  b.h = q / SH;  b.first.y = q % SH;  b.end.y = b.first.y + 1u; }
    if (BY_ELEMENT_W) { let q = b.w + PW % SW;  b.w = q / SW;  b.first.z = q % SW;  b.end.z = b.first.z + 1u; }
    return b;
}

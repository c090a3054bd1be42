// The header of every kernel, prepended by poolgpu.kernels (core.shader_source): its uniform
// Params at binding 0, one u32 per field of the Kernel's declaration (Kernel.fields: the
// slots' <slot>_base element offsets, then Kernel.params, in the order Python packs them),
// and the workgroup width shared by the grids (common/grid.wgsl, row_grid.wgsl,
// flat_index.wgsl), set by the kernel's pass.

override WG_X: u32 = 64u;   // invocations per workgroup along x

struct Params {
    x_base: u32,
    y_base: u32,
    idx_base: u32,
    channels: u32,
    in_d: u32,
    in_h: u32,
    in_w: u32,
    out_d: u32,
    out_h: u32,
    out_w: u32,
    x_n: u32,
    x_c: u32,
    x_d: u32,
    x_h: u32,
    x_w: u32,
    y_n: u32,
    y_c: u32,
    y_d: u32,
    y_h: u32,
    y_w: u32,
    idx_n: u32,
    idx_c: u32,
    idx_d: u32,
    idx_h: u32,
    idx_w: u32,
    columns: u32,
    lines: u32,
    line_groups: u32,
    planes: u32,
    plane_origin: u32,
    columns_magic: u32,
    columns_shift: u32,
    lines_magic: u32,
    lines_shift: u32,
    opaque_zero: u32,
}
@group(0) @binding(0) var<uniform> params: Params;

// Integer values of 8, 16 or 32 bits, zero-extended into a u32.  The key is the value as an
// i32: shifting left by 0 then arithmetically right sign-extends signed 8- and 16-bit
// values (0 = 32 - bits for them, 0 otherwise).  Below 32 bits, KEY_FLOOR (the least
// i32) is below every key, so padding never wins; INT32 keys span all of i32 and have none.
alias Raw = u32;
alias Key = i32;
const HAS_KEY_FLOOR = true;
const KEY_FLOOR = i32(-2147483647 - 1);
fn key_of(r: Raw) -> Key { return bitcast<i32>(r << 0u) >> 0u; }
fn key_gt(a: Key, b: Key) -> bool { return a > b; }
// A value as the two words of a partial result (common/*_partials.wgsl), and back.
fn raw_words(r: Raw) -> vec2<u32> { return vec2<u32>(r, 0u); }
fn raw_of_words(w: vec2<u32>) -> Raw { return w.x; }

// Tensor `x`, read four 8-bit elements at a time (one word; e a multiple of 4), each
// zero-extended.
@group(0) @binding(1) var<storage, read> x_words: array<u32>;
fn x_load4(e: u32) -> array<Raw, 4> {
    let w = x_words[e >> 2u];
    return array<Raw, 4>(w & 0xffu, (w >> 8u) & 0xffu, (w >> 16u) & 0xffu, w >> 24u);
}
// Eight elements (e a multiple of 8): two of the loads above (only 16-bit types load
// eight at once; window_walk_rows.wgsl's PAIRED).
fn x_load8(e: u32) -> array<Raw, 8> {
    let a = x_load4(e);
    let b = x_load4(e + 4u);
    return array<Raw, 8>(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]);
}

// Tensor `y`, written four 8-bit elements at a time (one word; e a multiple of 4).
@group(0) @binding(2) var<storage, read_write> y_words: array<u32>;
fn y_store4(e: u32, v: array<Raw, 4>) {
    y_words[e >> 2u] = (v[0] & 0xffu) | ((v[1] & 0xffu) << 8u) | ((v[2] & 0xffu) << 16u) | (v[3] << 24u);
}

// Tensor `idx` was not given (an optional output, the partial results of a walk that is
// not split, or an optional input such as a zero point): its stores compile to nothing, its
// elements read as 0.
fn idx_load(e: u32) -> u32 { return 0u; }
fn idx_store_index(e: u32, i: u32) {}
fn idx_store(e: u32, v: Raw) {}
fn idx_store4_index(e: u32, i: array<u32, 4>) {}
fn idx_store4(e: u32, v: array<Raw, 4>) {}
fn idx_store_pair(e: u32, v0: Raw, v1: Raw) {}
fn idx_word_store(e: u32, v: u32) {}
fn idx_word(e: u32) -> u32 { return 0u; }

// Max pooling: DirectML MAX_POOLING, MAX_POOLING1 (optional indices), MAX_POOLING2 (dilations).
// A window walk (common/window_walk*.wgsl) feeds each window to the max rule's accumulator
// (common/max_accumulator.wgsl); the winner's raw bits are the output: values stay exact.

// The accumulator of output `at`'s window before its first tap (the general walk's).
fn acc_for(at: Out) -> Acc { return acc_new(); }
fn acc_value(acc: Acc, at: Out) -> Raw { return acc.raw; }
fn acc_index(acc: Acc) -> u32 { return acc.index; }

// The max rule of the fixed-window max operators (max pooling and its gradient), as an
// accumulator (the interface of common/window_geometry.wgsl).  Fed the window's taps in
// increasing flat index, a strict `>` on exact integer keys keeps the first maximum (ties,
// -0 == +0) and the first NaN (NaN keys are the largest); padding (`inside` false) is never
// a candidate.  Types with a key floor start from it, so any input element beats it; the
// others (32- and 64-bit integers) track `found` instead.  `raw` is the winner's bits,
// `index` its flat logical index; `found` is false only for a window wholly in padding.

struct Tap { key: Key, raw: Raw }

fn tap_of(raw: Raw) -> Tap {
    return Tap(key_of(raw), raw);
}

struct Acc { key: Key, raw: Raw, index: u32, found: bool }

fn acc_new() -> Acc {
    var acc: Acc;
    acc.key = KEY_FLOOR;
    return acc;
}

fn acc_add(acc: Acc, t: Tap, index: u32, inside: bool) -> Acc {
    let take = inside && (key_gt(t.key, acc.key) || (!HAS_KEY_FLOOR && !acc.found));
    return Acc(select(acc.key, t.key, take), select(acc.raw, t.raw, take), select(acc.index, index, take),
               acc.found || take);
}

// The accumulator of two disjoint sets of taps (the plane walk's merge): the larger key, and
// among equal keys the smaller index, as feeding all taps in increasing index would keep.
fn acc_merge(a: Acc, b: Acc) -> Acc {
    let equal = !key_gt(a.key, b.key) && !key_gt(b.key, a.key);
    if (b.found && (!a.found || key_gt(b.key, a.key) || (equal && b.index < a.index))) { return b; }
    return a;
}

// u32 division by a divisor fixed for a dispatch, without an integer division instruction:
// on SIMD CPU adapters (lavapipe) a per-lane integer division runs lane by lane, while
// this multiplies and shifts all lanes at once.  The host computes (magic, shift) for
// divisor d (kernels.divisor_params, Granlund and Montgomery's round-up method); then for
// every u32 n, n / d = (t + ((n - t) >> 1)) >> shift with t = mul_high(n, magic) (d = 1:
// shift 0 and no halving).

// The high word of the 64-bit product a * b, from 16-bit halves (WGSL has no 64-bit
// integers): no partial sum below exceeds 2^32 - 1.
fn mul_high(a: u32, b: u32) -> u32 {
    let a_lo = a & 0xffffu;
    let a_hi = a >> 16u;
    let b_lo = b & 0xffffu;
    let b_hi = b >> 16u;
    let hi_lo = a_hi * b_lo;
    let cross = ((a_lo * b_lo) >> 16u) + (hi_lo & 0xffffu) + a_lo * b_hi;
    return a_hi * b_hi + (hi_lo >> 16u) + (cross >> 16u);
}

fn divide(n: u32, d: u32, magic: u32, shift: u32) -> u32 {
    let t = mul_high(n, magic);
    return (t + ((n - t) >> select(1u, 0u, d == 1u))) >> shift;
}

// The (column, line, plane) grid of the kernels that include it: columns and lines (of
// WG_X and WG_Y invocations per workgroup) run over workgroup x and y, planes (WG_Z per
// workgroup) over z, folded into y past 65535 (kernels.lines_grid sizes it).  Where that
// would still exceed 65535 workgroups in a dimension (millions of columns or lines), the
// workgroups are numbered flat instead (FOLDED).  Planes count from plane_origin (a chunk's
// first, kernels.chunked).  The kernel's Params holds `columns, lines, line_groups, planes,
// plane_origin` and the divisors' (magic, shift) of columns and lines; each kernel says what
// its columns, lines and planes are.  Needs common/divide.wgsl.

// The workgroup: WG_X invocations along a line (common/header.wgsl), WG_Y lines, and WG_Z
// planes where lines are too short to fill it.
override WG_Y: u32 = 1u;
override WG_Z: u32 = 1u;
override FOLDED: bool = false;
// The positions numbered flat (Tuning.whole_workgroups): lane l of workgroup g (numbered as
// FOLDED's) takes position p = g * WG_X + l of the (plane, line, column) order, so every lane
// of every workgroup but the last is busy where the shapes above fit whole lines (rows of
// 56 columns: 56 of 64 lanes); two divisions per lane, by multiply-high (common/divide.wgsl).
override FLAT: bool = false;

// The invocation's (column, line, plane); column >= params.columns past the end.  With
// WG_Z = 1 the plane is uniform across a workgroup, so the divisions splitting it into
// coordinates give every lane the same values (lavapipe still makes them lane by lane:
// see the README); several planes per workgroup only serve outputs too small to fill one.
fn grid_position(wg: vec3<u32>, lid: vec3<u32>) -> vec3<u32> {
    if (FLAT) {
        let p = (wg.y * 65535u + wg.x) * WG_X + lid.x;
        let rest = divide(p, params.columns, params.columns_magic, params.columns_shift);   // (plane, line)
        let plane = divide(rest, params.lines, params.lines_magic, params.lines_shift);
        let column = select(p - rest * params.columns, params.columns, plane >= params.planes);
        return vec3<u32>(column, rest - plane * params.lines, params.plane_origin + plane);
    }
    var groups = vec3<u32>(wg.x, wg.y % params.line_groups, wg.z + 65535u * (wg.y / params.line_groups));
    if (FOLDED) {
        let group = wg.y * 65535u + wg.x;   // (column group, line group, plane group), flat
        let column_groups = (params.columns + WG_X - 1u) / WG_X;
        let rest = group / column_groups;
        groups = vec3<u32>(group % column_groups, rest % params.line_groups, rest / params.line_groups);
    }
    let column = groups.x * WG_X + lid.x;
    let line = groups.y * WG_Y + lid.y;
    let plane = groups.z * WG_Z + select(lid.z, 0u, WG_Z == 1u);
    let outside = line >= params.lines || plane >= params.planes;
    return vec3<u32>(select(column, params.columns, outside), line, params.plane_origin + plane);
}


// The window geometry as override constants, shared by every kernel that walks or gathers
// over pooling windows: specialised per description, so window loops unroll and, without
// padding, bounds checks fold away.  poolgpu.kernels's window_constants sets them.

override KD: u32 = 1u;  override KH: u32 = 1u;  override KW: u32 = 1u;   // window size
override SD: u32 = 1u;  override SH: u32 = 1u;  override SW: u32 = 1u;   // strides
override LD: u32 = 1u;  override LH: u32 = 1u;  override LW: u32 = 1u;   // dilations
override PD: u32 = 0u;  override PH: u32 = 0u;  override PW: u32 = 0u;   // start padding
override PADDED: bool = true;   // some window reaches into padding

// Whether an element `offset` elements past a window's first tap is one of its `taps` taps
// (`dilation` apart) along a dimension.  (The forward rows and channels walks keep their
// own unsigned test: through this one, lavapipe's code for them grew, and the machine's
// noise could not show that it cost nothing.)
fn is_tap(offset: i32, dilation: u32, taps: u32) -> bool {
    return offset >= 0 && u32(offset) % dilation == 0u && u32(offset) / dilation < taps;
}

// What the three window walks (window_walk*.wgsl) and their accumulators share besides the
// window geometry (common/window_constants.wgsl): the uniform Params and output coordinates.
//
// Every tensor is seen as 5-D {N, C, D, H, W}; 1-D and 2-D pooling have unit D (and H).
// A walk feeds each output's window taps, in increasing flat index, to the operator's
// accumulator:
//     struct Tap; fn tap_of(raw: Raw) -> Tap;      // once per loaded input element
//     struct Acc; fn acc_new() -> Acc;
//     fn acc_for(at: Out) -> Acc;                  // the general walk's start of output at's window
//     fn acc_add(acc: Acc, t: Tap, index: u32, inside: bool) -> Acc;
//     fn acc_value(acc: Acc, at: Out) -> Raw;  fn acc_index(acc: Acc) -> u32;
// where `inside` says the tap is input data (not padding: its Tap is then a clamped
// neighbour's and must be ignored) and `index` is its flat logical input index.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

// The output element an accumulator finishes.
struct Out { n: u32, c: u32, d: u32, h: u32, w: u32 }

fn y_offset(at: Out) -> u32 {
    return params.y_base + at.n * params.y_n + at.c * params.y_c + at.d * params.y_d + at.h * params.y_h + at.w * params.y_w;
}

fn idx_offset(at: Out) -> u32 {
    return params.idx_base + at.n * params.idx_n + at.c * params.idx_c + at.d * params.idx_d + at.h * params.idx_h + at.w * params.idx_w;
}

// Position `start + k * dilation` along a dimension of `size`: the clamped coordinate to
// read (always inside the tensor) and whether it is real data.
struct Coord { at: u32, inside: bool }
fn coord(start: i32, k: u32, dilation: u32, size: u32) -> Coord {
    let p = start + i32(k * dilation);
    return Coord(u32(clamp(p, 0, i32(size) - 1)), !PADDED || (p >= 0 && p < i32(size)));
}

// Runs of a window's taps along one dimension (the walks, the split gathers).

// The taps [first, end) of a window starting at `start` (`taps` taps `dilation` apart along
// a dimension) that lie inside [0, size).  Exact in u32: the padded size is below 2^31.
struct Taps { first: u32, end: u32 }
fn taps_inside(start: i32, taps: u32, dilation: u32, size: u32) -> Taps {
    let first = select(0u, (u32(-start) + dilation - 1u) / dilation, start < 0);
    if (start >= i32(size)) { return Taps(first, first); }
    let end = min(taps, u32(i32(size) - 1 - start) / dilation + 1u);
    return Taps(first, max(first, end));
}

// Part `part` of `parts` of the taps (split walks): the parts are consecutive runs of taps,
// as even as can be (the first len % parts of them one tap longer).
fn taps_part(t: Taps, part: u32, parts: u32) -> Taps {
    if (parts == 1u) { return t; }
    let len = t.end - t.first;
    let base = len / parts;
    let extra = len % parts;
    let first = t.first + base * part + min(part, extra);
    return Taps(first, first + base + u32(part < extra));
}

// The window walk for tensors contiguous along C (channels last: NHWC, NDHWC, NWC; see
// window_geometry.wgsl): one invocation computes four neighbouring channels c0 .. c0 + 3
// of a block of ROWS x COLS output positions (oh0 + a, ow0 + b; each 1 or 2), reading each
// input position's four channels at once (one 16-byte load for 32-bit types) and feeding
// it to every output of the block whose window holds it: overlapping windows (3x3 stride 2:
// a row and a column in three) share their loads.
//
// Requires (poolgpu.kernels checks): x and y (and idx) contiguous along C, positions and the
// tensors' starts at multiples of 4 elements; C a multiple of 4.

override ROWS: u32 = 1u;
override COLS: u32 = 1u;
// The input rows and columns of a block's windows written out (Tuning.channels_written_out,
// where they are at most 6 each), so that a lane's loads are in flight together; else loops
// (on lavapipe no slower: LLVM unrolls them).  The same taps in the same order either way.
override WRITTEN_OUT: bool = false;

// The block's outputs' accumulators: output (oh0 + a, ow0 + b) in a<a><b>.
struct Block { a00: array<Acc, 4>, a01: array<Acc, 4>, a10: array<Acc, 4>, a11: array<Acc, 4> }

// One input position's four channels into the four channels' accumulators of an output.
fn four_channels(acc: array<Acc, 4>, chunk: array<Raw, 4>, index: u32, plane_size: u32, inside: bool) -> array<Acc, 4> {
    return array<Acc, 4>(
        acc_add(acc[0], tap_of(chunk[0]), index, inside),
        acc_add(acc[1], tap_of(chunk[1]), index + plane_size, inside),
        acc_add(acc[2], tap_of(chunk[2]), index + 2u * plane_size, inside),
        acc_add(acc[3], tap_of(chunk[3]), index + 3u * plane_size, inside));
}

fn store_channels(acc: array<Acc, 4>, at: Out) {
    // (array values built in place: naga rejects a `var` array passed by value)
    let values = array<Raw, 4>(
        acc_value(acc[0], at),
        acc_value(acc[1], Out(at.n, at.c + 1u, at.d, at.h, at.w)),
        acc_value(acc[2], Out(at.n, at.c + 2u, at.d, at.h, at.w)),
        acc_value(acc[3], Out(at.n, at.c + 3u, at.d, at.h, at.w)));
    let indices = array<u32, 4>(acc_index(acc[0]), acc_index(acc[1]), acc_index(acc[2]), acc_index(acc[3]));
    y_store4(y_offset(at), values);
    idx_store4_index(idx_offset(at), indices);
}

// Whether tap offset `t` (input position minus the block's first window's start) is a tap of
// the block's output `o` along a dimension of window `taps`, stride and dilation.
fn tap_of_output(t: u32, o: u32, stride: u32, dilation: u32, taps: u32) -> bool {
    return t >= o * stride && (t - o * stride) % dilation == 0u && (t - o * stride) / dilation < taps;
}

// The input rows and columns the block's windows span, from its first window's start.
fn row_span() -> u32 { return (ROWS - 1u) * SH + (KH - 1u) * LH + 1u; }
fn column_span() -> u32 { return (COLS - 1u) * SW + (KW - 1u) * LW + 1u; }

// Where a block reads: its input plane (the first channel's element at d), that plane's
// flat logical index, whether d is inside, the windows' start along H and W.
struct Rows { x_plane: u32, logical_plane: u32, inside: bool, h0: i32, w0: i32, plane_size: u32 }

// Row r of the span: each of its columns fed to the block's outputs whose windows hold it.
fn block_row(b: Block, at: Rows, r: u32) -> Block {
    if (r >= row_span()) { return b; }
    let row0 = tap_of_output(r, 0u, SH, LH, KH);
    let row1 = ROWS == 2u && tap_of_output(r, 1u, SH, LH, KH);
    if (!row0 && !row1) { return b; }
    let h = coord(at.h0, r, 1u, params.in_h);
    let row = Row(at.x_plane + h.at * params.x_h, at.logical_plane + h.at * params.in_w, at.inside && h.inside,
                  row0, row1, at.w0, at.plane_size);
    var a = b;
    if (WRITTEN_OUT) {
        a = block_tap(a, row, 0u);
        a = block_tap(a, row, 1u);
        a = block_tap(a, row, 2u);
        a = block_tap(a, row, 3u);
        a = block_tap(a, row, 4u);
        a = block_tap(a, row, 5u);
        return a;
    }
    for (var q = 0u; q < column_span(); q++) { a = block_tap(a, row, q); }
    return a;
}

// A row of the span: its first element in x and flat logical index, whether it is inside,
// which of the block's output rows' windows hold it.
struct Row { x_row: u32, logical_row: u32, inside: bool, row0: bool, row1: bool, w0: i32, plane_size: u32 }

// Column q of the row: its four channels fed to the block's outputs whose windows hold it.
fn block_tap(b: Block, row: Row, q: u32) -> Block {
    if (q >= column_span()) { return b; }
    let col0 = tap_of_output(q, 0u, SW, LW, KW);
    let col1 = COLS == 2u && tap_of_output(q, 1u, SW, LW, KW);
    if (!col0 && !col1) { return b; }
    let w = coord(row.w0, q, 1u, params.in_w);
    let chunk = x_load4(row.x_row + w.at * params.x_w);
    let index = row.logical_row + w.at;   // channel c0's
    let inside = row.inside && w.inside;
    var a = b;
    if (row.row0 && col0) { a.a00 = four_channels(a.a00, chunk, index, row.plane_size, inside); }
    if (row.row0 && col1) { a.a01 = four_channels(a.a01, chunk, index, row.plane_size, inside); }
    if (row.row1 && col0) { a.a10 = four_channels(a.a10, chunk, index, row.plane_size, inside); }
    if (row.row1 && col1) { a.a11 = four_channels(a.a11, chunk, index, row.plane_size, inside); }
    return a;
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let pos = grid_position(wg, lid);   // (c0 / 4, ow0 / COLS, (n, od, oh0 / ROWS))
    if (pos.x >= params.columns) { return; }
    let c0 = 4u * pos.x;
    let ow0 = COLS * pos.y;
    let row_blocks = (params.out_h + ROWS - 1u) / ROWS;
    let oh0 = ROWS * (pos.z % row_blocks);
    let od = (pos.z / row_blocks) % params.out_d;
    let n = pos.z / (row_blocks * params.out_d);

    let x_start = params.x_base + n * params.x_n + c0;
    let plane_size = params.in_d * params.in_h * params.in_w;
    let logical_start = (n * params.channels + c0) * plane_size;
    let d0 = i32(od * SD) - i32(PD);
    let h0 = i32(oh0 * SH) - i32(PH);
    let w0 = i32(ow0 * SW) - i32(PW);

    let fresh = array<Acc, 4>(acc_new(), acc_new(), acc_new(), acc_new());
    var b = Block(fresh, fresh, fresh, fresh);
    for (var kd = 0u; kd < KD; kd++) {
        let d = coord(d0, kd, LD, params.in_d);
        let at = Rows(x_start + d.at * params.x_d, logical_start + d.at * params.in_h * params.in_w, d.inside, h0, w0,
                      plane_size);
        if (WRITTEN_OUT) {
            b = block_row(b, at, 0u);
            b = block_row(b, at, 1u);
            b = block_row(b, at, 2u);
            b = block_row(b, at, 3u);
            b = block_row(b, at, 4u);
            b = block_row(b, at, 5u);
            continue;
        }
        for (var r = 0u; r < row_span(); r++) { b = block_row(b, at, r); }
    }
    store_channels(b.a00, Out(n, c0, od, oh0, ow0));
    let second_col = COLS == 2u && ow0 + 1u < params.out_w;
    let second_row = ROWS == 2u && oh0 + 1u < params.out_h;
    if (second_col) { store_channels(b.a01, Out(n, c0, od, oh0, ow0 + 1u)); }
    if (second_row) { store_channels(b.a10, Out(n, c0, od, oh0 + 1u, ow0)); }
    if (second_row && second_col) { store_channels(b.a11, Out(n, c0, od, oh0 + 1u, ow0 + 1u)); }
}

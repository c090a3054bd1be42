// What the row gathers of the gradients (max_pool_grad_rows.wgsl, average_pool_grad_rows.wgsl)
// share.  One invocation computes eight neighbouring dx elements along W, w0 .. w0 + 7, of
// two neighbouring rows h0 and h0 + 1 of one (n, c, d).  It visits the window rows (kd, oh)
// that can cover either row (OH_ROWS of them per kd, from the last down) and, in each, the
// dy (and argmax) columns of DY_CHUNKS aligned 4-element chunks, from the last down to the
// one holding the first column whose window can reach w0 (poolgpu.kernels sizes both so that
// they hold every window reaching the 2 x 8 elements): each 16-byte load serves sixteen dx
// elements, and a window row both rows share (3x3 stride 2: one in two) is read once.
// (The gather before, scalar loads of each reaching column for four dx elements per
// invocation, was 1.2x (A) to 2.7x (B average) slower on lavapipe.)
// Windows are visited in the order of the block gathers (kd ascending, kh ascending: oh
// descending, ow descending: kw ascending), so both give the same bits.
//
// The kernel walks the window rows and hands each to visit_chunks, which visits its chunks
// and their columns, last to first, through what the kernel declares:
//   struct WindowRow   what its gathers need of one window row;
//   struct Chunk       one chunk's loaded columns;
//   fn load_chunk(row: WindowRow, j: u32) -> Chunk;
//   fn gather_column(sums: Sixteen, row: WindowRow, chunk: Chunk, j: u32, k: u32) -> Sixteen
//                      (column k of step j's chunk added to the sums it reaches).
// visit_chunks writes the steps j (up to 4) and columns k out, so that they are constants
// once inlined: with FIXED_COLUMNS, which dx columns a window column reaches
// (columns_reached) is then a constant, and the compares and adds for those it cannot
// reach fold away (3x3 stride 2: 3 of 8 per window column are left; left to loops,
// lavapipe kept them all: case A's max gradient gather 2x faster).
//
// Requires (poolgpu.kernels checks): dx and dy (and the argmax) contiguous along W.  With
// common/gather_rows_store4.wgsl and chunk loads, their rows and starts at multiples of 4
// elements, in_w and out_w multiples of 4; with common/gather_rows_store_any.wgsl and
// common/read4_any.wgsl ("rows_any": any widths, rows that start anywhere), chunks
// assembled from single loads and dx stored element by element.  A row's last chunk then
// reaches past out_w: its columns there are no windows (columns_in_row).
// Grid (common/grid.wgsl): (w0 / 8, h0 / 2, (n, c, d)).

override DY_CHUNKS: u32 = 1u;
override OH_ROWS: u32 = 1u;

// The output coordinate o whose window's tap k lands on input position p, when there is
// one (o * stride - pad + k * dilation = p, 0 <= o < count).
struct Hit { o: u32, hit: bool }
fn window_of(p: u32, k: u32, stride: u32, dilation: u32, pad: u32, count: u32) -> Hit {
    let num = i32(p + pad) - i32(k * dilation);
    return Hit(u32(num) / stride, is_tap(num, stride, count));   // (windows `stride` apart)
}

// The first output column whose window can reach input column w0 (its last tap).
fn first_column(w0: u32) -> u32 {
    let num = i32(w0 + PW) - i32((KW - 1u) * LW);
    return select(0u, (u32(num) + SW - 1u) / SW, num > 0);
}

// With FIXED_COLUMNS (poolgpu.kernels: SW of 1 or 2, so that w0 = 8 * column is a whole number
// of chunks' worth of window columns), the chunks visited start at w0 / (4 * SW) +
// FIRST_CHUNK in every invocation, so whether a chunk's column reaches the eight dx
// columns is the same in all of them, and the gathers skip those that do not (3x3 stride
// 2: three of the eight visited; case A on lavapipe, average gradient 1.3x, max 1.05x faster).
override FIXED_COLUMNS: bool = false;
override FIRST_CHUNK: i32 = 0;

// The dy chunk of the invocation of w0 at step j (DY_CHUNKS down to 1); negative before the row.
fn chunk_at(w0: u32, j: u32) -> i32 {
    if (FIXED_COLUMNS) { return i32(w0 / (4u * SW)) + FIRST_CHUNK + i32(j) - 1; }
    return i32(first_column(w0) / 4u + j - 1u);
}

// Where step j's chunk is read in a row of `last_chunk` + 1 chunks: its first column `at`
// (clamped into the row) and whether it is in the row (`real`: else it holds no window).
struct ChunkPlace { first_window: i32, at: u32, real: bool }
fn chunk_place(w0: u32, j: u32, last_chunk: i32) -> ChunkPlace {
    let chunk = chunk_at(w0, j);
    return ChunkPlace(4 * chunk, 4u * u32(clamp(chunk, 0, last_chunk)), chunk >= 0 && chunk <= last_chunk);
}

// The last chunk of a dy row (one reaching past out_w where it is no multiple of 4).
fn dy_last_chunk() -> i32 { return i32((params.out_w + 3u) / 4u) - 1; }

// Which of a chunk's four columns are windows: those of a chunk in the row, before out_w.
fn columns_in_row(place: ChunkPlace) -> vec4<bool> {
    return vec4<bool>(place.real) & (vec4<i32>(place.first_window) + vec4<i32>(0, 1, 2, 3) < vec4<i32>(i32(params.out_w)));
}

// FIXED_COLUMNS: which of the dx columns w0 .. w0 + 7 the taps of column k of step j's chunk
// land on (constants when j and k are: see visit_chunks); without FIXED_COLUMNS, all.
struct Reach { lo: vec4<bool>, hi: vec4<bool> }
fn columns_reached(j: u32, k: u32) -> Reach {
    if (!FIXED_COLUMNS) { return Reach(vec4<bool>(true), vec4<bool>(true)); }
    // the dx column (from w0) of the column's first tap
    let first = i32(SW * (4u * (j - 1u) + k)) + 4 * i32(SW) * FIRST_CHUNK - i32(PW);
    return Reach(vec4<bool>(is_tap(-first, LW, KW), is_tap(1 - first, LW, KW), is_tap(2 - first, LW, KW),
                            is_tap(3 - first, LW, KW)),
                 vec4<bool>(is_tap(4 - first, LW, KW), is_tap(5 - first, LW, KW), is_tap(6 - first, LW, KW),
                            is_tap(7 - first, LW, KW)));
}

fn column_reaches(j: u32, k: u32) -> bool {
    let reach = columns_reached(j, k);
    return any(reach.lo) || any(reach.hi);
}

// Window row `row`'s chunks, last to first (see the top): the steps j beyond 4 (wide
// windows) in a loop, the last four written out.
fn visit_chunks(sums: Sixteen, row: WindowRow) -> Sixteen {
    var s = sums;
    for (var j = DY_CHUNKS; j > 4u; j--) { s = visit_columns(s, row, j); }
    if (DY_CHUNKS >= 4u) { s = visit_columns(s, row, 4u); }
    if (DY_CHUNKS >= 3u) { s = visit_columns(s, row, 3u); }
    if (DY_CHUNKS >= 2u) { s = visit_columns(s, row, 2u); }
    return visit_columns(s, row, 1u);
}

fn visit_columns(sums: Sixteen, row: WindowRow, j: u32) -> Sixteen {
    let chunk = load_chunk(row, j);
    var s = sums;
    // (skipping a column is a constant branch with FIXED_COLUMNS; without, never taken)
    if (column_reaches(j, 3u)) { s = gather_column(s, row, chunk, j, 3u); }
    if (column_reaches(j, 2u)) { s = gather_column(s, row, chunk, j, 2u); }
    if (column_reaches(j, 1u)) { s = gather_column(s, row, chunk, j, 1u); }
    if (column_reaches(j, 0u)) { s = gather_column(s, row, chunk, j, 0u); }
    return s;
}

// The 2 x 8 dx elements this invocation computes: (n, c, d), the first row h0 and column
// w0; `inside` false past the grid's end.  Reads the Params fields columns, in_d and channels.
struct DxBlock { n: u32, c: u32, nc: u32, d: u32, h0: u32, w0: u32, inside: bool }
fn dx_block(wg: vec3<u32>, lid: vec3<u32>) -> DxBlock {
    let pos = grid_position(wg, lid);
    let nc = pos.z / params.in_d;
    return DxBlock(nc / params.channels, nc % params.channels, nc, pos.z % params.in_d, 2u * pos.y, 8u * pos.x,
                   pos.x < params.columns);
}

// Whether window row oh's taps reach dx row h.
fn covers_row(oh: u32, h: u32) -> bool {
    return is_tap(i32(h + PH) - i32(oh * SH), LH, KH);
}

// The last window row that can cover dx row h0 + 1: the window rows visited are
// last_window_row(h0) - i for i < OH_ROWS, those in [0, out_h).
fn last_window_row(h0: u32) -> i32 { return i32((h0 + 1u + PH) / SH); }

// The sums of dx elements w0 .. w0 + 3 (lo) and w0 + 4 .. w0 + 7 (hi), of row h0 (first)
// and h0 + 1 (second).
struct Eight { lo: vec4<f32>, hi: vec4<f32> }
struct Sixteen { first: Eight, second: Eight }

// `value` added to the elements whose mask is set (the others kept as they are: where a
// mask is a constant false, nothing is left to compute).
fn add_where(sums: Eight, value: f32, lo: vec4<bool>, hi: vec4<bool>) -> Eight {
    return Eight(select(sums.lo, sums.lo + value, lo), select(sums.hi, sums.hi + value, hi));
}

// The eight sums stored at dx_row + w0, those of the next row dx_step further when it is
// inside (store_eight: common/gather_rows_store4.wgsl's or gather_rows_store_any.wgsl's).
fn store_sixteen(dx_row: u32, dx_step: u32, h0: u32, w0: u32, sums: Sixteen) {
    store_eight(dx_row, w0, sums.first);
    if (h0 + 1u < params.in_h) { store_eight(dx_row + dx_step, w0, sums.second); }
}

// Max unpooling (DirectML MAX_UNPOOLING), pass 2 of 2: write every output element.
//
// One invocation per output element e (flat logical index): winner[e] (from pass 1) is
// j + 1 for the input element j that lands there, or 0 for none.  The element gets x[j]'s
// raw bits (any of the ten types) or the type's zero.  Each invocation also resets its
// winner to 0, so the scratch (zero-filled when allocated) is clean for the next call
// without a clearing pass.
//
// Prepended by kernels.py: the value type (Raw) and the tensors x (x_load), winner
// (winner_exchange) and y (y_store), the output.

override WG_X: u32 = 64u;

struct Params {
    x_base: u32, winner_base: u32, y_base: u32,
    channels: u32,
    in_d: u32, in_h: u32, in_w: u32,
    out_d: u32, out_h: u32, out_w: u32,
    x_n: u32, x_c: u32, x_d: u32, x_h: u32, x_w: u32,
    y_n: u32, y_c: u32, y_d: u32, y_h: u32, y_w: u32,
    // rows of out_w outputs, N * C * out_d * out_h in all (common/row_grid.wgsl)
    column_groups: u32, rows: u32, row_origin: u32,
    // Inputs larger than a binding are read in ranges (kernels.chunked): this dispatch copies
    // winners j in [source_first, source_first + source_count); with `zeros` it writes the
    // type's zero where there is no winner, with `reset` it clears the winners.
    source_first: u32, source_count: u32, zeros: u32, reset: u32,
}
@group(0) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let at = row_position(wg, lane);
    let ow = at.column;
    let row = at.row;
    if (ow >= params.out_w || !at.inside) { return; }
    let oh = row % params.out_h;
    let od = (row / params.out_h) % params.out_d;
    let nc = row / (params.out_h * params.out_d);

    let slot = params.winner_base + row * params.out_w + ow;
    var winner: u32;
    if (params.reset != 0u) { winner = winner_exchange(slot, 0u); } else { winner = winner_load(slot); }
    let j = winner - 1u;  // the input element's flat logical index
    if ((winner == 0u && params.zeros == 0u) || (winner != 0u && j - params.source_first >= params.source_count)) {
        return;  // another dispatch's
    }
    var value = Raw();
    if (winner != 0u) {  // its coordinates
        let w = j % params.in_w;
        let h = (j / params.in_w) % params.in_h;
        let d = (j / (params.in_w * params.in_h)) % params.in_d;
        let jnc = j / (params.in_w * params.in_h * params.in_d);
        value = x_load(params.x_base + (jnc / params.channels) * params.x_n + (jnc % params.channels) * params.x_c
                       + d * params.x_d + h * params.x_h + w * params.x_w);
    }
    y_store(params.y_base + (nc / params.channels) * params.y_n + (nc % params.channels) * params.y_c
            + od * params.y_d + oh * params.y_h + ow * params.y_w, value);
}

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
    rows: u32,          // N * C * out_d * out_h: one row of out_w outputs each
    rows_per_z: u32,    // rows are folded over workgroup y and z (each at most 65535)
}
@group(0) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let ow = wg.x * WG_X + lane;
    let row = wg.z * params.rows_per_z + wg.y;
    if (ow >= params.out_w || row >= params.rows) { return; }
    let oh = row % params.out_h;
    let od = (row / params.out_h) % params.out_d;
    let nc = row / (params.out_h * params.out_d);

    let winner = winner_exchange(params.winner_base + row * params.out_w + ow, 0u);
    var value = Raw();
    if (winner != 0u) {
        let j = winner - 1u;  // the input element's flat logical index -> its coordinates
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

// fractional_max_pool.wgsl's walk of four outputs along W per invocation: each window's taps
// loaded one by one (any strides), the four windows' starts one 16-byte load of the table.
// Each tap goes to its own window only: with windows a few elements wide, feeding every
// element of the 4-element chunks spanning the four windows to all four made several times
// the accumulator steps (case FR, 2 x 2 windows: 40 where 8 are the windows' taps; lavapipe
// 0.71-0.85x the time this way).  Each window row written out up to 4 taps (as
// fractional_walk1.wgsl), a loop past that.  Stores: rows_store4.wgsl or rows_store_tail.wgsl.
const RUN: u32 = 4u;

struct Four { a0: Acc, a1: Acc, a2: Acc, a3: Acc }

// Tap k of each of the four windows starting at `starts` in an input row.
fn taps(f: Four, x_row: u32, e_row: u32, starts: vec4<u32>, k: u32) -> Four {
    let p = starts + vec4<u32>(k);
    let w = p * params.x_w;
    return Four(acc_add(f.a0, tap_of(x_load(x_row + w.x)), e_row + p.x, true),
                acc_add(f.a1, tap_of(x_load(x_row + w.y)), e_row + p.y, true),
                acc_add(f.a2, tap_of(x_load(x_row + w.z)), e_row + p.z, true),
                acc_add(f.a3, tap_of(x_load(x_row + w.w)), e_row + p.w, true));
}

fn window_rows(f_in: Four, x_row: u32, e_row: u32, starts: vec4<u32>) -> Four {
    var f = f_in;
    if (WINDOW_W <= 4u) {
        f = taps(f, x_row, e_row, starts, 0u);
        if (WINDOW_W > 1u) { f = taps(f, x_row, e_row, starts, 1u); }
        if (WINDOW_W > 2u) { f = taps(f, x_row, e_row, starts, 2u); }
        if (WINDOW_W > 3u) { f = taps(f, x_row, e_row, starts, 3u); }
        return f;
    }
    for (var kw = 0u; kw < WINDOW_W; kw++) { f = taps(f, x_row, e_row, starts, kw); }
    return f;
}

fn pool_run(r: Run) {
    let starts = bins_load4(r.table + params.starts_w + r.at.w);
    var f = Four(acc_new(), acc_new(), acc_new(), acc_new());
    for (var kd = 0u; kd < WINDOW_D; kd++) {
        for (var kh = 0u; kh < WINDOW_H; kh++) {
            f = window_rows(f, row_x(r, kd, kh), row_e(r, kd, kh), starts);
        }
    }
    store_four(array<Acc, 4>(f.a0, f.a1, f.a2, f.a3), r.at);
}

// fractional_max_pool.wgsl's walk of one output per invocation: its taps loaded one by one,
// each window row written out up to 4 taps (naga's loop counters keep drivers from unrolling
// loops), a loop past that.
const RUN: u32 = 1u;

fn tap(acc: Acc, x_row: u32, e_row: u32, w: u32) -> Acc {
    return acc_add(acc, tap_of(x_load(x_row + w * params.x_w)), e_row + w, true);
}

fn window_row(acc_in: Acc, x_row: u32, e_row: u32, start: u32) -> Acc {
    var acc = acc_in;
    if (WINDOW_W <= 4u) {
        acc = tap(acc, x_row, e_row, start);
        if (WINDOW_W > 1u) { acc = tap(acc, x_row, e_row, start + 1u); }
        if (WINDOW_W > 2u) { acc = tap(acc, x_row, e_row, start + 2u); }
        if (WINDOW_W > 3u) { acc = tap(acc, x_row, e_row, start + 3u); }
        return acc;
    }
    for (var kw = 0u; kw < WINDOW_W; kw++) { acc = tap(acc, x_row, e_row, start + kw); }
    return acc;
}

fn pool_run(r: Run) {
    let start = bins_load(r.table + params.starts_w + r.at.w);
    var acc = acc_new();
    for (var kd = 0u; kd < WINDOW_D; kd++) {
        for (var kh = 0u; kh < WINDOW_H; kh++) {
            acc = window_row(acc, row_x(r, kd, kh), row_e(r, kd, kh), start);
        }
    }
    store_one(r.at, acc);
}

// fractional_max_pool.wgsl's walk of four outputs along W per invocation (poolgpu.kernels
// checks: x contiguous along W, its other steps and start at multiples of 4 elements): each
// input row of their windows is read in 4-element chunks, from the one holding the first
// window's first column to the one holding the last window's last, and each chunk's elements
// fed to every window holding them (one load per chunk, not one per tap; the windows' four
// starts one 16-byte load of the table).  Stores: rows_store4.wgsl or rows_store_tail.wgsl.
const RUN: u32 = 4u;

struct Four { a0: Acc, a1: Acc, a2: Acc, a3: Acc }

// Element `e` (flat logical index) at input column p to the windows starting at `starts`.
fn feed(f: Four, raw: Raw, p: u32, e: u32, starts: vec4<u32>) -> Four {
    let tap = tap_of(raw);
    let holds = (vec4<u32>(p) - starts) < vec4<u32>(WINDOW_W);   // (unsigned: columns before a window wrap)
    return Four(acc_add(f.a0, tap, e, holds.x), acc_add(f.a1, tap, e, holds.y), acc_add(f.a2, tap, e, holds.z),
                acc_add(f.a3, tap, e, holds.w));
}

fn window_rows(f_in: Four, x_row: u32, e_row: u32, starts: vec4<u32>) -> Four {
    var f = f_in;
    let last = (starts.w + WINDOW_W - 1u) / 4u;
    for (var q = starts.x / 4u; q <= last; q++) {
        let chunk = x_load4(x_row + 4u * q);
        let p = 4u * q;
        f = feed(f, chunk[0], p, e_row + p, starts);
        f = feed(f, chunk[1], p + 1u, e_row + p + 1u, starts);
        f = feed(f, chunk[2], p + 2u, e_row + p + 2u, starts);
        f = feed(f, chunk[3], p + 3u, e_row + p + 3u, starts);
    }
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

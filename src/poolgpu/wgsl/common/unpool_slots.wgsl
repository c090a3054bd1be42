// The winner slot of an input element's output element in the passes over input elements
// into a dense output (max_unpool_winners.wgsl, max_unpool_scatter.wgsl): its flat logical
// index, or with SLOTS_AT_OFFSETS (an output in another order of its dimensions, e.g.
// channels-last) its offset from y's first element, which is also where the scatter writes
// it.  Slots at offsets keep the atomics and the writes of neighbouring lanes (neighbouring
// channels, along C) near one another, where logical indices of neighbouring channels lie
// a plane apart.  Needs common/output_coordinates.wgsl and the Params fields y_n .. y_w.

override SLOTS_AT_OFFSETS: bool = false;

fn winner_slot(s: UnpoolSource) -> u32 {
    if (!SLOTS_AT_OFFSETS) { return s.dest; }
    return output_offset(s.dest, s.n, s.c);
}

// The offset of output element t from y's first element.  Where t lies in plane (n, c) (the
// usual case: max pooling's indices name their own plane) its coordinates within the plane
// take two divisions, not output_coordinates' four.
fn output_offset(t: u32, n: u32, c: u32) -> u32 {
    let plane_size = params.out_d * params.out_h * params.out_w;
    let within = t - (n * params.channels + c) * plane_size;   // (wraps below the plane)
    var at: Coordinates;
    if (within < plane_size) {
        let rows = divide(within, params.out_w, params.out_w_magic, params.out_w_shift);   // (d, h)
        at.w = within - rows * params.out_w;
        at.d = divide(rows, params.out_h, params.out_h_magic, params.out_h_shift);
        at.h = rows - at.d * params.out_h;
        at.n = n;
        at.c = c;
    } else {
        at = output_coordinates(t);
    }
    return at.n * params.y_n + at.c * params.y_c + at.d * params.y_d + at.h * params.y_h + at.w * params.y_w;
}

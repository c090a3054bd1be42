// store_eight of common/gather_rows.wgsl where dx rows are whole chunks: two 16-byte stores
// (the second four only inside the row: in_w may be 4 more than a multiple of 8).

fn store_eight(dx_row: u32, w0: u32, sums: Eight) {
    let lo = sums.lo;  let hi = sums.hi;
    dx_store4(dx_row + w0, array<Raw, 4>(from_f32(lo.x), from_f32(lo.y), from_f32(lo.z), from_f32(lo.w)));
    if (w0 + 4u < params.in_w) {
        dx_store4(dx_row + w0 + 4u, array<Raw, 4>(from_f32(hi.x), from_f32(hi.y), from_f32(hi.z), from_f32(hi.w)));
    }
}

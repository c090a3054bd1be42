// Tensor `$name`, four elements from any element e: e .. e + 3, each its own load through
// the type's scalar read snippet (before this one).  For rows that start anywhere (the
// "rows_any" walk of window_walk_rows.wgsl and row gathers of gather_rows.wgsl): a row's
// last chunk may reach up to three elements past it, or past the binding, where WGSL's
// robust accesses read a value of the binding or zero; the walk takes no such element as a
// tap of an output it stores, the gathers none as a window (columns_in_row).
fn ${name}_load4(e: u32) -> array<Raw, 4> {
    return array<Raw, 4>(${name}_load(e), ${name}_load(e + 1u), ${name}_load(e + 2u), ${name}_load(e + 3u));
}
// (window_walk_rows.wgsl's PAIRED reads, never taken with this snippet, but compiled)
fn ${name}_load8(e: u32) -> array<Raw, 8> {
    let a = ${name}_load4(e);
    let b = ${name}_load4(e + 4u);
    return array<Raw, 8>(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]);
}

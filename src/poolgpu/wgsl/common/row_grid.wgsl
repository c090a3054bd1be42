// Invocations over `rows` rows of columns (kernels.row_grid): workgroups of WG_X lanes,
// ROW_LANES of them along a row and WG_X / ROW_LANES rows per workgroup (so rows shorter
// than a workgroup leave no lane idle), each row in column_groups workgroups; row groups
// over workgroup y, folded into z past 65535, or all workgroups numbered flat where rows
// need more than 65535 (FOLDED); rows counted from params.row_origin (a chunk's first row,
// kernels.chunked).  The kernel's Params holds column_groups, rows and row_origin.
override ROW_LANES: u32 = 64u;
override FOLDED: bool = false;

struct RowPosition { column: u32, row: u32, inside: bool }

fn row_position(wg: vec3<u32>, lane: u32) -> RowPosition {
    var groups = vec2<u32>(wg.x, wg.z * 65535u + wg.y);   // (column group, row group)
    if (FOLDED) {
        let group = wg.y * 65535u + wg.x;   // uniform: divided once per workgroup
        groups = vec2<u32>(group % params.column_groups, group / params.column_groups);
    }
    let rows_per_group = WG_X / ROW_LANES;
    let row = groups.y * rows_per_group + lane / ROW_LANES;
    let column = groups.x * ROW_LANES + lane % ROW_LANES;
    // (lanes past the last whole row of a workgroup idle)
    let inside = row < params.rows && lane < rows_per_group * ROW_LANES;
    return RowPosition(column, params.row_origin + row, inside);
}

// Invocations over `rows` rows of columns (kernels.row_grid): workgroups of WG_X lanes,
// ROW_LANES of them along a row and WG_X / ROW_LANES rows per workgroup (so rows shorter
// than a workgroup leave no lane idle), each row in column_groups workgroups; workgroups
// numbered flat so that any counts fit the grid; rows counted from params.row_origin (a
// chunk's first row, kernels.chunked).  The kernel's Params holds column_groups, rows and
// row_origin.
override ROW_LANES: u32 = 64u;

struct RowPosition { column: u32, row: u32, inside: bool }

fn row_position(wg: vec3<u32>, lane: u32) -> RowPosition {
    let group = wg.y * 65535u + wg.x;   // uniform: its divisions are made once per workgroup
    let rows_per_group = WG_X / ROW_LANES;
    let row = (group / params.column_groups) * rows_per_group + lane / ROW_LANES;
    let column = (group % params.column_groups) * ROW_LANES + lane % ROW_LANES;
    // (lanes past the last whole row of a workgroup idle)
    let inside = row < params.rows && lane < rows_per_group * ROW_LANES;
    return RowPosition(column, params.row_origin + row, inside);
}

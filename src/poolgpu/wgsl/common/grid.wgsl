// The (column, line, plane) grid of the kernels that include it: columns and lines (of
// WG_X and WG_Y invocations per workgroup) run over workgroup x and y, planes (WG_Z per
// workgroup) over z, folded into y past 65535 (kernels.lines_grid sizes it).  Where that
// would still exceed 65535 workgroups in a dimension (millions of columns or lines), the
// workgroups are numbered flat instead (FOLDED).  Planes count from plane_origin (a chunk's
// first, kernels.chunked).  The kernel's Params holds `columns, lines, line_groups, planes,
// plane_origin` and the divisors' (magic, shift) of columns and lines; each kernel says what
// its columns, lines and planes are.  Needs common/divide.wgsl.

// The workgroup: WG_X invocations along a line (common/header.wgsl), WG_Y lines, and WG_Z
// planes where lines are too short to fill it.
override WG_Y: u32 = 1u;
override WG_Z: u32 = 1u;
override FOLDED: bool = false;
// The positions numbered flat (Tuning.whole_workgroups): lane l of workgroup g (numbered as
// FOLDED's) takes position p = g * WG_X + l of the (plane, line, column) order, so every lane
// of every workgroup but the last is busy where the shapes above fit whole lines (rows of
// 56 columns: 56 of 64 lanes); two divisions per lane, by multiply-high (common/divide.wgsl).
override FLAT: bool = false;

// The invocation's (column, line, plane); column >= params.columns past the end.  With
// WG_Z = 1 the plane is uniform across a workgroup, so the divisions splitting it into
// coordinates give every lane the same values (lavapipe still makes them lane by lane:
// see the README); several planes per workgroup only serve outputs too small to fill one.
fn grid_position(wg: vec3<u32>, lid: vec3<u32>) -> vec3<u32> {
    if (FLAT) {
        let p = (wg.y * 65535u + wg.x) * WG_X + lid.x;
        let rest = divide(p, params.columns, params.columns_magic, params.columns_shift);   // (plane, line)
        let plane = divide(rest, params.lines, params.lines_magic, params.lines_shift);
        let column = select(p - rest * params.columns, params.columns, plane >= params.planes);
        return vec3<u32>(column, rest - plane * params.lines, params.plane_origin + plane);
    }
    var groups = vec3<u32>(wg.x, wg.y % params.line_groups, wg.z + 65535u * (wg.y / params.line_groups));
    if (FOLDED) {
        let group = wg.y * 65535u + wg.x;   // (column group, line group, plane group), flat
        let column_groups = (params.columns + WG_X - 1u) / WG_X;
        let rest = group / column_groups;
        groups = vec3<u32>(group % column_groups, rest % params.line_groups, rest / params.line_groups);
    }
    let column = groups.x * WG_X + lid.x;
    let line = groups.y * WG_Y + lid.y;
    let plane = groups.z * WG_Z + select(lid.z, 0u, WG_Z == 1u);
    let outside = line >= params.lines || plane >= params.planes;
    return vec3<u32>(select(column, params.columns, outside), line, params.plane_origin + plane);
}


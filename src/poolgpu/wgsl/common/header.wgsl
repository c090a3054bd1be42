// The header of every kernel, prepended by poolgpu.kernels (core.shader_source): its uniform
// Params at binding 0, one u32 per field of the Kernel's declaration (Kernel.fields: the
// slots' <slot>_base element offsets, then Kernel.params, in the order Python packs them),
// and the workgroup width shared by the grids (common/grid.wgsl, row_grid.wgsl,
// flat_index.wgsl), set by the kernel's pass.

override WG_X: u32 = 64u;   // invocations per workgroup along x

struct Params {
$fields
}
@group(0) @binding(0) var<uniform> params: Params;

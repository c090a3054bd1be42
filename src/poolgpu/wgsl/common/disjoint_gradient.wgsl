// The uniforms of the one-pass max gradients of disjoint windows (max_pool_grad_disjoint.wgsl,
// max_pool_grad_disjoint_rows.wgsl).

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

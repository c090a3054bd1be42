// The uniforms of the one-pass max gradients of disjoint windows (max_pool_grad_disjoint.wgsl,
// max_pool_grad_disjoint_rows.wgsl).

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

// A window's argmax as the one-pass gradients compare it with each dx element's flat index
// (none where the window does not exist or lies wholly in padding).
fn winner_of(acc: Acc, has_window: bool) -> u32 {
    return select(0xffffffffu, acc.index, has_window && acc.found);
}

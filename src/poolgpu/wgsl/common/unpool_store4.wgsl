// max_unpool_gather.wgsl's run of four output elements, in one 16-byte store (8-byte for
// 16-bit types) at `e` (poolgpu.kernels checks: the output contiguous along the run, its other
// steps and start at multiples of 4 elements).
fn store_run(e: u32) { y_store4(e, array<Raw, 4>(unpooled(0u), unpooled(1u), unpooled(2u), unpooled(3u))); }

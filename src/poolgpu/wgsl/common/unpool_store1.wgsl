// max_unpool_gather.wgsl's run of one output element, stored at `e`.
fn store_run(e: u32) { y_store(e, unpooled(0u)); }

// Tensor `$name` was not asked for (an optional output): its stores compile to nothing.
fn ${name}_store_index(e: u32, i: u32) {}
fn ${name}_store(e: u32, v: Raw) {}

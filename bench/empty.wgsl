// The host floor of the bench (not an operator): a dispatch that does nothing, so that a
// write, this dispatch and a read-back cost what wgpu and the driver cost around any
// operator (bench/host.py).

@compute @workgroup_size(1)
fn main() {
}

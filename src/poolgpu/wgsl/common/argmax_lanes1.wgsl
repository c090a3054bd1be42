// The argmax of one window, and whether it is `me` (and the window real), for the lanes of
// common/gather_lanes1.wgsl.
alias Arg = u32;
fn arg_at(e: u32) -> Arg { return arg_load(e); }
fn hits(arg: Arg, me: u32, real: bool) -> bool { return real && arg == me; }

// Runs of a window's taps along one dimension (the walks, the split gathers).

// The taps [first, end) of a window starting at `start` (`taps` taps `dilation` apart along
// a dimension) that lie inside [0, size).  Exact in u32: the padded size is below 2^31.
struct Taps { first: u32, end: u32 }
fn taps_inside(start: i32, taps: u32, dilation: u32, size: u32) -> Taps {
    let first = select(0u, (u32(-start) + dilation - 1u) / dilation, start < 0);
    if (start >= i32(size)) { return Taps(first, first); }
    let end = min(taps, u32(i32(size) - 1 - start) / dilation + 1u);
    return Taps(first, max(first, end));
}

// Part `part` of `parts` of the taps (split walks): the parts are consecutive runs of taps,
// as even as can be (the first len % parts of them one tap longer).
fn taps_part(t: Taps, part: u32, parts: u32) -> Taps {
    if (parts == 1u) { return t; }
    let len = t.end - t.first;
    let base = len / parts;
    let extra = len % parts;
    let first = t.first + base * part + min(part, extra);
    return Taps(first, first + base + u32(part < extra));
}

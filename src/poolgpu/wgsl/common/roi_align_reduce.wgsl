// ROI align's reduction of an output's samples (roi_align.wgsl, its merge and its
// gradients): the average (a sum until the end) or the first maximum.

override REDUCE_MAX: bool = false;   // false: the average

// A sample's value, and which of its corners (0 to 3: low-low, low-high, high-low,
// high-high) it is where the value is one corner's (nearest; weighted corners' maximum).
struct Sampled { value: f32, corner: u32 }

// An output's (or a part's) reduction: the sum, or the first maximum (`have`: a sample was
// taken; ties and a NaN after the first keep the earlier, as std::max does) with its sample
// (iy, ix) and corner.
struct Reduced { value: f32, have: bool, iy: u32, ix: u32, corner: u32 }

fn reduced_new() -> Reduced { return Reduced(0.0, false, 0u, 0u, 4u); }

fn reduced_add(acc: Reduced, s: Sampled, iy: u32, ix: u32) -> Reduced {
    if (!REDUCE_MAX) { return Reduced(as_written(acc.value + s.value), true, 0u, 0u, 4u); }
    if (!acc.have || acc.value < s.value) { return Reduced(s.value, true, iy, ix, s.corner); }
    return acc;
}

// Part b's reduction after part a's (parts in sample order).
fn reduced_merge(a: Reduced, b: Reduced) -> Reduced {
    if (!b.have) { return a; }
    if (!REDUCE_MAX) { return Reduced(as_written(a.value + b.value), true, 0u, 0u, 4u); }
    if (!a.have || a.value < b.value) { return b; }
    return a;
}

// A reduction's words in a split walk's scratch (roi_align.wgsl saves, roi_align_merge.wgsl loads).
const PART_WORDS: u32 = 5u;

// The output of a whole reduction over the inside samples [a, b) along Y and X of n_y x
// n_x samples (the others read `oob`); the argmax sample's corner 4 where the maximum is
// no element's (out of bounds, or no sample).
fn reduced_output(acc: Reduced, valid: bool, ny: u32, nx: u32, inside_y: u32, inside_x: u32, oob: f32) -> Reduced {
    let count = f32(ny) * f32(nx);
    if (count == 0.0) { return Reduced(0.0, false, 0u, 0u, 4u); }
    let inside = select(0.0, f32(inside_y) * f32(inside_x), valid);
    if (inside == 0.0) { return Reduced(oob, true, 0u, 0u, 4u); }
    let outside = count - inside;
    if (REDUCE_MAX) {
        if (outside > 0.0 && acc.value < oob) { return Reduced(oob, true, 0u, 0u, 4u); }
        return acc;
    }
    var sum = acc.value;
    if (outside > 0.0 && oob != 0.0) { sum = as_written(sum + as_written(outside * oob)); }
    return Reduced(sum / count, true, 0u, 0u, 4u);
}

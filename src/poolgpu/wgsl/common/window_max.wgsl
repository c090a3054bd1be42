// The max rule of the fixed-window max operators (max pooling, its gradient): the winner
// of a window is the element with the largest key (value snippet: NaN above +inf,
// -0 == +0), the lowest flat index among equals; padding is never a candidate.
//
// The including kernel declares the window's override constants K{D,H,W} (size),
// L{D,H,W} (dilations) and PADDED (some window reaches into padding).

// Position `start + k * dilation` along a dimension of `size`: the clamped coordinate to
// read (always inside the tensor) and whether it is real data.
struct Tap { at: u32, inside: bool }
fn tap(start: i32, k: u32, dilation: u32, size: u32) -> Tap {
    let p = start + i32(k * dilation);
    return Tap(u32(clamp(p, 0, i32(size) - 1)), !PADDED || (p >= 0 && p < i32(size)));
}

// The maximum of the window starting at `start` (d, h, w; may lie in padding) over an
// {D, H, W} plane of `size` whose element (d, h, w) is read at x_plane + dot(strides, (d, h, w)).
// `index` is the winner's flat logical index (logical_plane + its row-major offset);
// `found` is false only for a window wholly in padding.
struct WindowMax { raw: Raw, index: u32, found: bool }
fn window_max(x_plane: u32, logical_plane: u32, start: vec3<i32>, size: vec3<u32>, strides: vec3<u32>) -> WindowMax {
    // Taps are visited in increasing flat index, so a strict `>` keeps the first maximum.
    var best_key: Key;
    var best_raw: Raw;
    var best_index = 0u;
    var found = false;
    for (var kd = 0u; kd < KD; kd++) {
        let d = tap(start.x, kd, LD, size.x);
        for (var kh = 0u; kh < KH; kh++) {
            let h = tap(start.y, kh, LH, size.y);
            for (var kw = 0u; kw < KW; kw++) {
                let w = tap(start.z, kw, LW, size.z);
                let raw = x_load(x_plane + d.at * strides.x + h.at * strides.y + w.at * strides.z);
                let key = key_of(raw);
                let take = d.inside && h.inside && w.inside && (!found || key_gt(key, best_key));
                best_key = select(best_key, key, take);
                best_raw = select(best_raw, raw, take);
                best_index = select(best_index, logical_plane + (d.at * size.y + h.at) * size.z + w.at, take);
                found = found || take;
            }
        }
    }
    return WindowMax(best_raw, best_index, found);
}

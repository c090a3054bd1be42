// The bin table of the bins walk (window_walk_bins.wgsl),
// written by a bins pass (roi_bins.wgsl, adaptive_bins.wgsl; sized by kernels._bin_table).
//
// Row layout, in u32 words:
//     [source batch, out_d (start, end) pairs along D, out_h pairs along H, out_w pairs along W]
// Each pair is a half-open range of input coordinates, already clamped to the input; an empty
// range makes the bin empty.  Along a row, starts and ends never decrease.  ROI pooling has
// one row per ROI (the output's batch index); fractional pooling one per (n, c) plane
// (PLANE_ROWS); adaptive pooling one row for all.  Outside ROI pooling the source batch word
// is unused (output n reads input n).
override ROI: bool = false;
override PLANE_ROWS: bool = false;

struct Bin { batch: u32, start: vec3<u32>, end: vec3<u32> }   // ranges along (D, H, W)

// The words of a table row, for outputs of spatial sizes `sizes`.
fn bin_row_words(sizes: vec3<u32>) -> u32 { return 1u + 2u * (sizes.x + sizes.y + sizes.z); }

// The bin of output (n, c, o.x, o.y, o.z) of an output with spatial sizes `sizes`.
fn bin_of(table_base: u32, n: u32, c: u32, o: vec3<u32>, sizes: vec3<u32>) -> Bin {
    let row = table_base + select(select(0u, n, ROI), n * params.channels + c, PLANE_ROWS) * bin_row_words(sizes);
    let d = row + 1u + 2u * o.x;
    let h = row + 1u + 2u * (sizes.x + o.y);
    let w = row + 1u + 2u * (sizes.x + sizes.y + o.z);
    return Bin(
        select(n, bins_load(row), ROI),
        vec3<u32>(bins_load(d), bins_load(h), bins_load(w)),
        vec3<u32>(bins_load(d + 1u), bins_load(h + 1u), bins_load(w + 1u)),
    );
}

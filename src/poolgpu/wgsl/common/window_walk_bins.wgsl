// The bins walk (see window_geometry.wgsl): pooling over variable bins, ROI pooling,
// adaptive pooling and fractional pooling.  Each output's bin comes from the bin table a bins pass wrote
// (common/bin_table.wgsl); bins are clamped to the input, so every tap is input data and
// nothing outside it is read.  One invocation per output, numbered flat over
// {N, C, out_d, out_h, out_w} (common/flat_index.wgsl, from params.origin: a chunk's
// first); taps in increasing flat index, so an empty bin (ROI pooling only) gives the
// accumulator's empty value (max: 0, index 0).
//
// Bins with more taps than one invocation may walk are split as window_walk.wgsl splits
// windows: PARTS_D x PARTS_H x PARTS_W parts of each bin (PARTS of them, invocations
// numbered output * PARTS + part), each saved (acc_save) for window_walk_merge.wgsl.
//
// ROI pooling reads the input planes (batch * C + c) its ROIs name: for inputs larger than a
// binding (chunked) a dispatch walks only outputs reading planes in
// [source_first, source_first + source_count).

// Bins of a fixed size (fractional pooling): BIN_D x BIN_H x BIN_W taps from each bin's
// start (0: to the table's end).
override BIN_D: u32 = 0u;
override BIN_H: u32 = 0u;
override BIN_W: u32 = 0u;

// ROI pooling of whole tensors, C a multiple of 4 (poolgpu.kernels checks): 4 neighbouring
// channels' outputs per invocation (Tuning.roi_pool_channels), numbered over {N, C / 4, out_d,
// out_h, out_w} (or as CHANNEL_LANES says), sharing the bin's position and bounds; each
// channel's taps in the same order as alone (the same bits).
override CHANNELS: u32 = 1u;
// With CHANNELS = 4, the runs of channels numbered fastest ({N, out_d, out_h, out_w, C / 4}):
// neighbouring lanes take one bin of neighbouring runs, so that they walk the same taps (the
// same loop bounds: uniform control flow), each in its own planes
// (Tuning.roi_pool_channel_lanes).  Else neighbouring lanes take neighbouring bins of a plane.
override CHANNEL_LANES: bool = false;

override PARTS_D: u32 = 1u;
override PARTS_H: u32 = 1u;
override PARTS_W: u32 = 1u;
override PARTS: u32 = 1u;   // their product (computed by poolgpu.kernels)

// Output i of the binned kernels, counted over {N, C, out_d, out_h, out_w}: its coordinates
// and its bin.  Reads the Params fields bins_base, channels, out_d, out_h, out_w, their
// divisors' magic and shift and channel_runs (C / CHANNELS) with its own (common/divide.wgsl:
// integer divisions run lane by lane on SIMD CPU adapters).
struct BinnedOutput { n: u32, c: u32, o: vec3<u32>, bin: Bin }
fn binned_output(i: u32) -> BinnedOutput { return binned_output_of(i, 1u); }

// The same for outputs counted over {N, C / per, out_d, out_h, out_w} (runs of `per`
// channels, C a multiple of it; params.channel_runs = C / per): the first channel of the run
// and their shared bin.
fn binned_output_of(i: u32, per: u32) -> BinnedOutput {
    let at = output_position(i);   // (n * C / per + run, o)
    let n = divide(at.outer, params.channel_runs, params.channel_runs_magic, params.channel_runs_shift);
    return binned_output_at(n, at.outer - n * params.channel_runs, per, at.o);
}

// The same, numbered with the runs of channels fastest ({N, out_d, out_h, out_w, C / per}).
fn binned_output_lanes(i: u32, per: u32) -> BinnedOutput {
    let spot = divide(i, params.channel_runs, params.channel_runs_magic, params.channel_runs_shift);
    let at = output_position(spot);   // (n, o)
    return binned_output_at(at.outer, i - spot * params.channel_runs, per, at.o);
}

// A number over {outer, out_d, out_h, out_w}: outer and the output coordinates o.
struct OutputPosition { outer: u32, o: vec3<u32> }
fn output_position(i: u32) -> OutputPosition {
    let rows = divide(i, params.out_w, params.out_w_magic, params.out_w_shift);          // (outer, od, oh)
    let planes = divide(rows, params.out_h, params.out_h_magic, params.out_h_shift);     // (outer, od)
    let outer = divide(planes, params.out_d, params.out_d_magic, params.out_d_shift);
    return OutputPosition(outer, vec3<u32>(planes - outer * params.out_d, rows - planes * params.out_h,
                                           i - rows * params.out_w));
}

// Run `run` of `per` channels of image (ROI) n at output o, and its bin.
fn binned_output_at(n: u32, run: u32, per: u32, o: vec3<u32>) -> BinnedOutput {
    let c = run * per;
    let sizes = vec3<u32>(params.out_d, params.out_h, params.out_w);
    return BinnedOutput(n, c, o, bin_of(params.bins_base, n, c, o, sizes));
}

// Where acc_save (common/*_partials.wgsl) puts a part's words.
fn save_word(e: u32, v: u32) { part_word_store(e, v); }
fn load_word(e: u32) -> u32 { return part_word(e); }

// The outputs of channels c0 .. c0 + 3 at (n, o) (CHANNELS = 4; whole tensors, no parts),
// written out: an array of accumulators indexed by a loop variable would live in memory.
fn pool_four_channels(i: u32) {
    var out: BinnedOutput;
    if (CHANNEL_LANES) { out = binned_output_lanes(i, 4u); } else { out = binned_output_of(i, 4u); }
    let n = out.n;
    let c0 = out.c;
    let o = out.o;
    let bin = out.bin;
    let x_plane = params.x_base + bin.batch * params.x_n + c0 * params.x_c;
    let plane_size = params.in_d * params.in_h * params.in_w;
    let logical_plane = (bin.batch * params.channels + c0) * plane_size;
    var a0 = acc_new();
    var a1 = acc_new();
    var a2 = acc_new();
    var a3 = acc_new();
    for (var d = bin.start.x; d < bin.end.x; d++) {
        for (var h = bin.start.y; h < bin.end.y; h++) {
            for (var w = bin.start.z; w < bin.end.z; w++) {
                let at = x_plane + d * params.x_d + h * params.x_h + w * params.x_w;
                let e = logical_plane + (d * params.in_h + h) * params.in_w + w;
                a0 = acc_add(a0, tap_of(x_load(at)), e, true);
                a1 = acc_add(a1, tap_of(x_load(at + params.x_c)), e + plane_size, true);
                a2 = acc_add(a2, tap_of(x_load(at + 2u * params.x_c)), e + 2u * plane_size, true);
                a3 = acc_add(a3, tap_of(x_load(at + 3u * params.x_c)), e + 3u * plane_size, true);
            }
        }
    }
    store_one(Out(n, c0, o.x, o.y, o.z), a0);
    store_one(Out(n, c0 + 1u, o.x, o.y, o.z), a1);
    store_one(Out(n, c0 + 2u, o.x, o.y, o.z), a2);
    store_one(Out(n, c0 + 3u, o.x, o.y, o.z), a3);
}

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let local = flat_index(wg, groups, lane, WG_X, params.total);
    if (local >= params.total) { return; }
    let t = params.origin + local;
    if (CHANNELS == 4u) {
        pool_four_channels(t);
        return;
    }
    let output = t / PARTS;
    let part = t % PARTS;
    let out = binned_output(output);
    let bin = out.bin;
    if (ROI && bin.batch * params.channels + out.c - params.source_first >= params.source_count) { return; }

    let x_plane = params.x_base + bin.batch * params.x_n + out.c * params.x_c;
    let logical_plane = (bin.batch * params.channels + out.c) * params.in_d * params.in_h * params.in_w;
    let sizes = vec3<u32>(BIN_D, BIN_H, BIN_W);
    let end = select(bin.end, bin.start + sizes, sizes > vec3<u32>(0u));
    let ws = taps_part(Taps(bin.start.z, end.z), part % PARTS_W, PARTS_W);
    let hs = taps_part(Taps(bin.start.y, end.y), (part / PARTS_W) % PARTS_H, PARTS_H);
    let ds = taps_part(Taps(bin.start.x, end.x), part / (PARTS_W * PARTS_H), PARTS_D);
    var acc = acc_new();
    for (var d = ds.first; d < ds.end; d++) {
        for (var h = hs.first; h < hs.end; h++) {
            for (var w = ws.first; w < ws.end; w++) {
                let raw = x_load(x_plane + d * params.x_d + h * params.x_h + w * params.x_w);
                acc = acc_add(acc, tap_of(raw), logical_plane + (d * params.in_h + h) * params.in_w + w, true);
            }
        }
    }
    if (PARTS > 1u) {
        acc_save(params.part_base + t * ACC_WORDS, acc);
        return;
    }
    store_one(Out(out.n, out.c, out.o.x, out.o.y, out.o.z), acc);
}

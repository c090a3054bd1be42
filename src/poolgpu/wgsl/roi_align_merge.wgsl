// ROI align's merge of a split walk (roi_align.wgsl): each output's PARTS reductions, in
// part order, GROUP of them per invocation; the last level (FINAL) writes the output (and
// the argmax, as roi_align.wgsl), earlier levels their merged reductions into `merged`.
// One invocation per output and group, numbered flat (from params.origin).
//
// Prepended by poolgpu.kernels: the value type and the tensors part (part_word), merged
// (merged_word_store), table (table_word), y (y_store) and arg (arg_word_store); library:
// roi_align_table.wgsl, roi_align_reduce.wgsl, flat_index.wgsl, as_written.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

override PARTS: u32 = 1u;   // the reductions per output this level reads
override GROUP: u32 = 1u;   // ... merged by one invocation
override FINAL: bool = true;

fn reduced_load(e: u32) -> Reduced {
    return Reduced(bitcast<f32>(part_word(e)), part_word(e + 1u) != 0u, part_word(e + 2u), part_word(e + 3u),
                   part_word(e + 4u));
}
fn merged_save(e: u32, acc: Reduced) {
    merged_word_store(e, bitcast<u32>(acc.value));
    merged_word_store(e + 1u, select(0u, 1u, acc.have));
    merged_word_store(e + 2u, acc.iy);
    merged_word_store(e + 3u, acc.ix);
    merged_word_store(e + 4u, acc.corner);
}

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let local = flat_index(wg, groups, lane, WG_X, params.total);
    if (local >= params.total) { return; }
    let t = params.origin + local;
    let groups_per_output = (PARTS + GROUP - 1u) / GROUP;
    let output = t / groups_per_output;
    let group = t % groups_per_output;
    let first = group * GROUP;
    let end = min(first + GROUP, PARTS);
    var acc = reduced_new();
    for (var p = first; p < end; p++) {
        acc = reduced_merge(acc, reduced_load(params.part_base + (output * PARTS + p) * PART_WORDS));
    }
    if (!FINAL) {
        merged_save(params.merged_base + t * PART_WORDS, acc);
        return;
    }
    let o = roi_output(output);
    let r = o.r;
    let c = o.c;
    let oh = o.oh;
    let ow = o.ow;
    let row = params.table_base + r * roi_row_words();
    let valid = table_word(row) < params.in_n;
    let ey = roi_entry(row, 0u, oh);
    let ex = roi_entry(row, 1u, ow);
    let result = reduced_output(acc, valid, roi_axis(row, 0u).n, roi_axis(row, 1u).n, ey.y - ey.x, ex.y - ex.x,
                                bitcast<f32>(params.oob));
    y_store(params.y_base + r * params.y_n + c * params.y_c + oh * params.y_h + ow * params.y_w, from_f32(result.value));
    let at = params.arg_base + output * 3u;
    arg_word_store(at, result.iy);
    arg_word_store(at + 1u, result.ix);
    arg_word_store(at + 2u, result.corner);
}

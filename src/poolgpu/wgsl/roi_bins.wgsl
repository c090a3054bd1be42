// ROI pooling, pass 1: each ROI's bins (DirectML ROI_POOLING), into the bin table
// (layout: common/bin_table.wgsl; one row per ROI, out_d = 1).
//
// For a ROI [batch, x1, y1, x2, y2] (x along W, y along H) and a dimension with corners
// a, b (after scaling), input size `size` and `pooled` bins:
//     a = round(corner * spatial_scale)   (an f32 product; halves away from zero)
//     region = max(b - a + 1, 1)
//     bin i = [floor(i * region / pooled) + a, ceil((i + 1) * region / pooled) + a), clamped to [0, size]
// The arithmetic is exact for every finite ROI value: products and rounding are done in
// integers (wide_int.wgsl), so no corner, however large, can wrap around into the input.
// A ROI with a non-finite value or product, or whose batch (truncated toward zero) is
// outside [0, N), gets only empty bins: its output is 0.
//
// One invocation per ROI r and entry t: t = 0 writes the source batch and the unit D pair,
// t in [1, 1 + pooled_h) an H bin, the rest a W bin.
//
// Prepended by poolgpu.kernels: the value type (to_f32) and the tensors roi (roi_load) and bins
// (bins_store); library: wide_int.wgsl, flat_index.wgsl.

// Params (binding 0): declared with its Kernel in poolgpu/kernels, prepended as common/header.wgsl.

// A finite f32 as mantissa * 2^exponent (the hidden bit included in the mantissa).
struct Scaled { mantissa: u32, exponent: i32, negative: bool }

fn scaled_of(bits: u32) -> Scaled {
    let biased = (bits >> 23u) & 0xffu;
    let mantissa = (bits & 0x7fffffu) | select(0u, 0x800000u, biased != 0u);
    return Scaled(mantissa, i32(max(biased, 1u)) - 150i, (bits >> 31u) != 0u);
}

fn bit_length(v: u32) -> u32 { return 32u - countLeadingZeros(v); }

// The f32 product a * b as an f32 multiply rounds it (to nearest, ties to even, subnormals
// kept), but computed in integers: exact whatever the float unit does with subnormals or
// overflow.  `finite` is false where the product overflows f32.
struct Product { value: Scaled, finite: bool }

fn f32_product(a: Scaled, b: Scaled) -> Product {
    let m = mul_wide(a.mantissa, b.mantissa);   // < 2^48
    let negative = a.negative != b.negative;
    let bits = select(bit_length(m.x), 32u + bit_length(m.y), m.y != 0u);
    if (bits == 0u) { return Product(Scaled(0u, 0i, negative), true); }
    var exponent = a.exponent + b.exponent;
    // The lowest bit f32 keeps: 24 significant bits, but nothing below 2^-149 (subnormals).
    let lowest = max(exponent + i32(bits) - 24i, -149i);
    var mantissa = m.x;   // exact when nothing is dropped: then m < 2^24
    if (lowest > exponent) {
        let dropped = u32(lowest - exponent);
        mantissa = 0u;
        if (dropped <= 64u) {
            let t = shr_wide(m, dropped - 1u);              // the rounding bit is t's lowest
            let kept = (t.x >> 1u) | (t.y << 31u);
            let below = dropped - 1u;                       // bits under the rounding bit
            var sticky = false;
            if (below >= 32u) {
                sticky = m.x != 0u || (m.y & ((1u << (below - 32u)) - 1u)) != 0u;
            } else if (below > 0u) {
                sticky = (m.x & ((1u << below) - 1u)) != 0u;
            }
            let up = (t.x & 1u) == 1u && (sticky || (kept & 1u) == 1u);
            mantissa = kept + select(0u, 1u, up);          // at most 2^24
        }
        exponent = lowest;
    }
    // Finite iff mantissa * 2^exponent < 2^128.
    let finite = mantissa == 0u || exponent + i32(bit_length(mantissa)) <= 128i;
    return Product(Scaled(mantissa, exponent, negative), finite);
}

// round(v) with halves away from zero, exactly, for a finite v = mantissa * 2^exponent
// (mantissa <= 2^24, so |v| < 2^128 needs at most four words).
fn wide_round_half_away(v: Scaled) -> Wide {
    var w: Wide;
    if (v.exponent >= 0i) {
        let e = u32(v.exponent);
        let shift = e & 31u;
        w[e >> 5u] = v.mantissa << shift;
        if (shift != 0u) { w[(e >> 5u) + 1u] = v.mantissa >> (32u - shift); }
    } else {
        // Adding half of the last kept unit before truncating rounds the magnitude's halves up.
        let s = u32(-v.exponent);
        if (s < 32u) { w[0] = (v.mantissa + (1u << (s - 1u))) >> s; }
    }
    if (v.negative) { return wide_negate(w); }
    return w;
}

// The ROI's batch value truncated toward zero, or `batches` (invalid) outside [0, batches).
fn batch_index(bits: u32, batches: u32) -> u32 {
    let v = scaled_of(bits);
    var magnitude = 0u;
    if (v.exponent > 8i) { return batches; }   // >= 2^32
    if (v.exponent >= 0i) {
        magnitude = v.mantissa << u32(v.exponent);
    } else {
        magnitude = v.mantissa >> min(u32(-v.exponent), 31u);
    }
    if (v.negative && magnitude != 0u) { return batches; }
    return min(magnitude, batches);
}

// Bin i of `pooled` along a dimension of `size` between the rounded corners a and b.
fn bin_range(a: Wide, b: Wide, i: u32, pooled: u32, size: u32) -> vec2<u32> {
    var region = wide_add(wide_add(b, wide_negate(a)), wide_of(1u));
    if (wide_is_negative(region) || wide_is_zero(region)) { region = wide_of(1u); }
    let offset = wide_mul(a, pooled);   // a * pooled, so that floor(x / pooled) + a = floor((x + a * pooled) / pooled)
    let start = wide_add(wide_mul(region, i), offset);
    // ceil(x / pooled) = floor((x + pooled - 1) / pooled)
    let end = wide_add(wide_add(wide_mul(region, i + 1u), offset), wide_of(pooled - 1u));
    return vec2<u32>(wide_div_clamped(start, pooled, size), wide_div_clamped(end, pooled, size));
}

@compute @workgroup_size(WG_X)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let index = flat_index(wg, groups, lane, WG_X, params.total);
    if (index >= params.total) { return; }
    let entries = 1u + params.pooled_h + params.pooled_w;
    let r = index / entries;
    let t = index % entries;
    let row = params.bins_base + r * (1u + 2u * entries);

    // The ROI's values as f32 bits: [batch, x1, y1, x2, y2].
    var values: array<u32, 5>;
    var valid = true;
    for (var k = 0u; k < 5u; k++) {
        values[k] = bitcast<u32>(to_f32(roi_load(params.roi_base + r * params.roi_r + k * params.roi_k)));
        valid = valid && (values[k] & 0x7fffffffu) < 0x7f800000u;
    }
    let scale = scaled_of(params.scale_bits);
    var corners: array<Wide, 4>;    // rounded x1, y1, x2, y2
    for (var k = 0u; k < 4u; k++) {
        let product = f32_product(scaled_of(values[k + 1u]), scale);
        valid = valid && product.finite;
        if (product.finite) { corners[k] = wide_round_half_away(product.value); }
    }
    let batch = batch_index(values[0], params.batches);
    valid = valid && batch < params.batches;

    var pair = vec2<u32>(0u, 0u);   // empty unless the ROI is valid
    if (t == 0u) {
        bins_store(row, select(0u, batch, valid));
        pair = select(pair, vec2<u32>(0u, 1u), valid);   // the unit D dimension
    } else if (valid && t <= params.pooled_h) {
        pair = bin_range(corners[1], corners[3], t - 1u, params.pooled_h, params.in_h);
    } else if (valid) {
        pair = bin_range(corners[0], corners[2], t - 1u - params.pooled_h, params.pooled_w, params.in_w);
    }
    bins_store(row + 1u + 2u * t, pair.x);
    bins_store(row + 2u + 2u * t, pair.y);
}

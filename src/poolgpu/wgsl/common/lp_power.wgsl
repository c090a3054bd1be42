// v^exponent for v >= 0 or NaN (Lp pooling and its gradient).  WGSL leaves pow(0, y) and
// pow(NaN, y) to the implementation (Mesa 22's gives 0 for NaN): both are decided here, on
// the bits.
fn general_power(v: f32, exponent: f32) -> f32 {
    let bits = bitcast<u32>(v);
    return select(select(pow(v, exponent), 0.0, bits == 0u), v, bits > 0x7f800000u);
}

// Max unpooling's gather (max_unpool_gather.wgsl, max_unpool_strays.wgsl and the gradient's
// max_unpool_grad_gather.wgsl): the band of output coordinates each input element's index is
// expected in.  Along a dimension, input j's band is [j * STRIDE - BEFORE, j * STRIDE - BEFORE
// + WIDTH): for indices written by max pooling, the window of j (poolgpu.kernels sizes the
// bands from the input and output sizes so that they hold the windows of the usual
// geometries).  The gather finds an output element's winner among the inputs whose band
// holds it; an input whose index lies outside its band (a stray) is picked by an atomicMax in
// a scratch word instead, so every index counts whatever the bands.

override BAND_STRIDE_D: u32 = 1u;
override BAND_STRIDE_H: u32 = 1u;
override BAND_STRIDE_W: u32 = 1u;
override BAND_BEFORE_D: u32 = 0u;
override BAND_BEFORE_H: u32 = 0u;
override BAND_BEFORE_W: u32 = 0u;
override BAND_WIDTH_D: u32 = 1u;
override BAND_WIDTH_H: u32 = 1u;
override BAND_WIDTH_W: u32 = 1u;

// Whether input coordinate j's band holds output coordinate o (unsigned: an o before the
// band wraps past its width).
fn band_holds(o: u32, j: u32, stride: u32, before: u32, width: u32) -> bool {
    return o + before - j * stride < width;
}

// The largest input coordinate whose band can hold output coordinate o (smaller ones down to
// it less the dimension's candidates; a stride of an override constant: no division
// instruction).
fn band_last(o: u32, stride: u32, before: u32) -> u32 { return (o + before) / stride; }

// Whether input element (d, h, w) of a plane has its index in its band: output element
// (od, oh, ow) of the same plane.
fn in_band(od: u32, oh: u32, ow: u32, d: u32, h: u32, w: u32) -> bool {
    return band_holds(od, d, BAND_STRIDE_D, BAND_BEFORE_D, BAND_WIDTH_D)
           && band_holds(oh, h, BAND_STRIDE_H, BAND_BEFORE_H, BAND_WIDTH_H)
           && band_holds(ow, w, BAND_STRIDE_W, BAND_BEFORE_W, BAND_WIDTH_W);
}

// The coordinates (n, c, d, h, w) of output element t (its flat logical index over
// {N, C, out_d, out_h, out_w}) by common/divide.wgsl's divide(), each remainder by a
// multiply-subtract: the scattered or gathered outputs of unpooling
// (max_unpool_scatter.wgsl) and its gradient (max_unpool_grad.wgsl).  Reads the Params
// fields out_w, out_h, out_d, channels and their _magic and _shift.
struct Coordinates { n: u32, c: u32, d: u32, h: u32, w: u32 }

fn output_coordinates(t: u32) -> Coordinates {
    var at: Coordinates;
    let rows = divide(t, params.out_w, params.out_w_magic, params.out_w_shift);   // (n, c, d, h)
    at.w = t - rows * params.out_w;
    let planes = divide(rows, params.out_h, params.out_h_magic, params.out_h_shift);   // (n, c, d)
    at.h = rows - planes * params.out_h;
    let nc = divide(planes, params.out_d, params.out_d_magic, params.out_d_shift);
    at.d = planes - nc * params.out_d;
    at.n = divide(nc, params.channels, params.channels_magic, params.channels_shift);
    at.c = nc - at.n * params.channels;
    return at;
}

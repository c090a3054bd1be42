"""NumPy reference of ROI align (DirectML's ROI_ALIGN1 as docs/semantics.md defines it, and
so ONNX's RoiAlign and torchvision's roi_align), written from the documented semantics only:
it never imports poolgpu.  Float32 arithmetic, operation by operation, in the order ONNX
Runtime's and torchvision's CPU kernels compute (each float32 operation of NumPy rounds as
theirs)."""

from __future__ import annotations

import numpy as np

F = np.float32
ONE = F(1)


def _axis(c1, c2, scale, in_offset, out, min_region, min_s, max_s, align):
    """(start, bin (align: the region's size), samples n) of one axis of one ROI."""
    start = F(F(F(c1) * F(scale)) - F(in_offset))
    end = F(F(F(c2) * F(scale)) - F(in_offset))
    size = F(end - start)
    if min_region is not None and size < F(min_region):
        size = F(min_region)
    with np.errstate(invalid="ignore", over="ignore"):
        binned = F(size / F(out))
        c = np.ceil(binned)
    n = 0 if not c >= 1 else (2**32 - 1 if c >= 2**32 - 1 else int(c))
    n = min(max(n, min_s), max_s)
    return start, (size if align else binned), n


def _sample(start, bin_, n, o, i, out, out_offset, align):
    if align:
        points = F(F(out) * F(n))
        if points <= 1:
            return F(start + F(bin_ * F(0.5)))
        k = F(F(F(o) * F(n)) + F(i))
        return F(start + F(k * F(bin_ / F(points - ONE))))
    within = F(F(F(F(i) - F(out_offset)) * bin_) / F(n))
    return F(F(start + F(F(o) * bin_)) + within)


def _inside(start, bin_, n, o, out, out_offset, align, size):
    """The samples [a, b) of output o inside [-1, size]: they move monotonically with i, so
    they are a run (found by bisection: n may be 2^32 - 1)."""
    def at(i):
        return _sample(start, bin_, n, o, i, out, out_offset, align)

    if n == 0 or not (np.isfinite(start) or np.isinf(start)) or np.isnan(bin_) or np.isnan(start):
        return 0, 0
    rising = at(n - 1) >= at(0)

    def first(condition):
        low, high = 0, n
        while low < high:
            middle = (low + high) // 2
            if condition(at(middle)):
                high = middle
            else:
                low = middle + 1
        return low

    if rising:
        a, b = first(lambda v: v >= -1), first(lambda v: v > size)
    else:
        a, b = first(lambda v: v <= size), first(lambda v: v < -1)
    return a, max(a, b)


def _lerp(v, size):
    """(low, high, frac) of a coordinate inside [-1, size]; None outside."""
    if not (v >= -1 and v <= size):
        return None
    c = max(v, F(0))
    low = int(c)
    if low >= size - 1:
        return size - 1, size - 1, F(0)
    return low, low + 1, F(c - F(low))


def _value(plane, ly, lx, nearest, weighted):
    """(value per channel, corner) of one sample."""
    if nearest:
        y = ly[1] if ly[2] > 0.5 else ly[0]
        x = lx[1] if lx[2] > 0.5 else lx[0]
        return plane[:, y, x].astype(F), None
    v1, v2 = plane[:, ly[0], lx[0]].astype(F), plane[:, ly[0], lx[1]].astype(F)
    v3, v4 = plane[:, ly[1], lx[0]].astype(F), plane[:, ly[1], lx[1]].astype(F)
    hy, hx = F(ONE - ly[2]), F(ONE - lx[2])
    w = (F(hy * hx), F(hy * lx[2]), F(ly[2] * hx), F(ly[2] * lx[2]))
    terms = [F(w[0]) * v1, F(w[1]) * v2, F(w[2]) * v3, F(w[3]) * v4]
    if weighted:
        best = terms[0]
        for t in terms[1:]:
            best = np.where(best < t, t, best)
        return best, None
    return ((terms[0] + terms[1]) + terms[2]) + terms[3], None


def roi_align(x, rois, batch_indices, output_size, reduction="average", interpolation="linear", scale_x=1.0,
              scale_y=1.0, input_offset=0.5, output_offset=-0.5, oob=0.0, min_samples=1, max_samples=2**32 - 1,
              align_corners=False, min_region=None, weighted=False):
    """ROI_ALIGN1 of ``x`` (N, C, H, W) over ``rois`` (R, 4) ``[x1, y1, x2, y2]`` of images
    ``batch_indices`` (R,): (R, C, out_h, out_w) float32."""
    x = np.asarray(x, np.float32)
    rois = np.asarray(rois, np.float32).reshape(-1, 4)
    n_images, channels, height, width = x.shape
    out_h, out_w = output_size
    y = np.zeros((len(rois), channels, out_h, out_w), np.float32)
    for r, (roi, batch) in enumerate(zip(rois, np.asarray(batch_indices).reshape(-1))):
        sy, by, ny = _axis(roi[1], roi[3], scale_y, input_offset, out_h, min_region, min_samples, max_samples,
                           align_corners)
        sx, bx, nx = _axis(roi[0], roi[2], scale_x, input_offset, out_w, min_region, min_samples, max_samples,
                           align_corners)
        count = F(F(ny) * F(nx))
        valid = 0 <= int(batch) < n_images
        plane = x[int(batch)] if valid else None
        for oh in range(out_h):
            ay, by_ = _inside(sy, by, ny, oh, out_h, output_offset, align_corners, height)
            for ow in range(out_w):
                if count == 0:
                    continue
                ax, bx_ = _inside(sx, bx, nx, ow, out_w, output_offset, align_corners, width)
                inside = (by_ - ay) * (bx_ - ax) if valid else 0
                acc, have = np.zeros(channels, F), False
                for iy in range(ay, by_ if valid else ay):
                    ly = _lerp(_sample(sy, by, ny, oh, iy, out_h, output_offset, align_corners), height)
                    for ix in range(ax, bx_):
                        lx = _lerp(_sample(sx, bx, nx, ow, ix, out_w, output_offset, align_corners), width)
                        v, _ = _value(plane, ly, lx, interpolation == "nearest_neighbor",
                                      weighted and reduction == "max")
                        if reduction == "average":
                            acc = (acc + v).astype(F)
                        else:
                            acc = v if not have else np.where(acc < v, v, acc)
                        have = True
                outside = float(count) > inside
                if not have:
                    y[r, :, oh, ow] = oob
                elif reduction == "max":
                    y[r, :, oh, ow] = np.where(outside & (acc < F(oob)), F(oob), acc)
                else:
                    if outside and oob != 0:
                        acc = (acc + F(F(count - F(inside)) * F(oob))).astype(F)
                    y[r, :, oh, ow] = acc / count
    return y


def onnx_roi_align(x, rois, batch_indices, output_height=1, output_width=1, sampling_ratio=0, spatial_scale=1.0,
                   mode="avg", coordinate_transformation_mode="half_pixel"):
    """ONNX RoiAlign as ONNX Runtime's CPU provider computes it (max: of the weighted corners)."""
    half = coordinate_transformation_mode == "half_pixel"
    fixed = sampling_ratio > 0
    return roi_align(x, rois, batch_indices, (output_height, output_width), "max" if mode == "max" else "average",
                     scale_x=spatial_scale, scale_y=spatial_scale, input_offset=0.5 if half else 0.0,
                     min_samples=sampling_ratio if fixed else 0, max_samples=sampling_ratio if fixed else 2**32 - 1,
                     min_region=None if half else 1.0, weighted=True)


def torchvision_roi_align(x, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False):
    """torchvision.ops.roi_align of ``boxes`` (K, 5) ``[batch, x1, y1, x2, y2]``, as its CPU
    kernel computes it."""
    boxes = np.asarray(boxes, np.float32)
    fixed = sampling_ratio > 0
    return roi_align(x, boxes[:, 1:], boxes[:, 0].astype(np.int64), output_size, scale_x=spatial_scale,
                     scale_y=spatial_scale, input_offset=0.5 if aligned else 0.0,
                     min_samples=sampling_ratio if fixed else 0, max_samples=sampling_ratio if fixed else 2**32 - 1,
                     min_region=None if aligned else 1.0)


def roi_align_grad(x, rois, batch_indices, dy, output_size, reduction="average", interpolation="linear",
                   scale_x=1.0, scale_y=1.0, input_offset=0.5, output_offset=-0.5, min_samples=1,
                   max_samples=2**32 - 1, align_corners=False, min_region=None, weighted=False):
    """dx of :func:`roi_align` (out-of-bounds value 0), in float64: each output's dy spread
    over the elements its samples read with their weights (average: over the samples'
    count; maximum: its first largest sample's, or the winning weighted corner)."""
    x = np.asarray(x, np.float32)
    rois = np.asarray(rois, np.float32).reshape(-1, 4)
    dy = np.asarray(dy, np.float64)
    n_images, channels, height, width = x.shape
    out_h, out_w = output_size
    dx = np.zeros(x.shape, np.float64)
    nearest = interpolation == "nearest_neighbor"
    for r, (roi, batch) in enumerate(zip(rois, np.asarray(batch_indices).reshape(-1))):
        if not 0 <= int(batch) < n_images:
            continue
        sy, by, ny = _axis(roi[1], roi[3], scale_y, input_offset, out_h, min_region, min_samples, max_samples,
                           align_corners)
        sx, bx, nx = _axis(roi[0], roi[2], scale_x, input_offset, out_w, min_region, min_samples, max_samples,
                           align_corners)
        count = float(ny) * float(nx)
        plane = x[int(batch)]
        for oh in range(out_h):
            for ow in range(out_w):
                ay, by_ = _inside(sy, by, ny, oh, out_h, output_offset, align_corners, height)
                ax, bx_ = _inside(sx, bx, nx, ow, out_w, output_offset, align_corners, width)
                samples = [(_lerp(_sample(sy, by, ny, oh, iy, out_h, output_offset, align_corners), height),
                            _lerp(_sample(sx, bx, nx, ow, ix, out_w, output_offset, align_corners), width))
                           for iy in range(ay, by_) for ix in range(ax, bx_)]
                outside_count = count - len(samples)
                if reduction == "average":   # every channel at once
                    for ly, lx in samples:
                        ys = [(ly[0], 1 - float(ly[2])), (ly[1], float(ly[2]))]
                        xs = [(lx[0], 1 - float(lx[2])), (lx[1], float(lx[2]))]
                        if nearest:
                            ys = [(ly[1] if ly[2] > 0.5 else ly[0], 1.0)]
                            xs = [(lx[1] if lx[2] > 0.5 else lx[0], 1.0)]
                        for yy, wy in ys:
                            for xx, wx in xs:
                                dx[int(batch), :, yy, xx] += dy[r, :, oh, ow] / count * wy * wx
                    continue
                for ch in range(channels):
                    g = dy[r, ch, oh, ow]

                    def spread(ly, lx, scale, only=None):
                        ys = [(ly[0], 1 - float(ly[2])), (ly[1], float(ly[2]))]
                        xs = [(lx[0], 1 - float(lx[2])), (lx[1], float(lx[2]))]
                        if nearest:
                            ys = [(ly[1] if ly[2] > 0.5 else ly[0], 1.0)]
                            xs = [(lx[1] if lx[2] > 0.5 else lx[0], 1.0)]
                        for k, ((yy, wy), (xx, wx)) in enumerate((a, b) for a in ys for b in xs):
                            if only is None or k == only:
                                dx[int(batch), ch, yy, xx] += scale * wy * wx

                    best, arg, corner = None, None, None
                    for s in samples:
                        if s is None:
                            continue
                        v, _ = _value(plane[ch:ch + 1], s[0], s[1], nearest, False)
                        k = None
                        if weighted and not nearest:
                            ly, lx = s
                            hy, hx = F(ONE - ly[2]), F(ONE - lx[2])
                            w = (F(hy * hx), F(hy * lx[2]), F(ly[2] * hx), F(ly[2] * lx[2]))
                            vals = [F(w[0]) * plane[ch, ly[0], lx[0]], F(w[1]) * plane[ch, ly[0], lx[1]],
                                    F(w[2]) * plane[ch, ly[1], lx[0]], F(w[3]) * plane[ch, ly[1], lx[1]]]
                            k = 0
                            for j in range(1, 4):
                                if vals[k] < vals[j]:
                                    k = j
                            v = np.array([vals[k]], F)
                        if best is None or best < v[0]:
                            best, arg, corner = v[0], s, k
                    outside = outside_count > 0
                    if arg is None or (outside and best < 0):
                        continue
                    spread(*arg, g, corner)
    return dx

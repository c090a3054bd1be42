"""Independent NumPy reference for poolgpu's operators, written from the documented
semantics (docs/api.md, docs/semantics.md) only: it never imports poolgpu.

Conventions
-----------
* Tensors are logical NumPy arrays ``{N, C, [D,] [H,] W}`` (1 to 3 spatial dimensions);
  whatever strides the caller's array has, only logical values matter.
* Per-dimension parameters (``window_size``, ``strides``, ``start_padding``,
  ``end_padding``, ``dilations``) are sequences of one int per spatial dimension;
  ``None`` means all 1 (strides, dilations) or all 0 (paddings).
* Max-type operators work on all ten data types and copy values exactly (a NaN comes back
  bit for bit).  Comparisons are done natively in the input's dtype, so int64/uint64
  values beyond 2**53 are never rounded through floats.
* Float-valued results (average, Lp, gradients, adaptive average) are computed and returned
  in float64; callers round to float32/float16 themselves.
* Indices are flat, zero-based positions in the input's logical row-major order over all
  dimensions (N and C included), returned as int64.

Max rule (every max-type operator here): the winner of a window is the element that is
largest, where NaN counts as larger than every number and -0.0 == +0.0; among equal
candidates (including several NaNs) the lowest flat input index wins.  Padding is never
a candidate.

Implementation shape: loop over window taps (a handful), vectorise over N, C and all
output positions at once.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

__all__ = [
    "output_sizes",
    "max_pool",
    "average_pool",
    "lp_pool",
    "max_pool_grad",
    "average_pool_grad",
    "max_unpool",
    "roi_pool",
    "adaptive_max_pool",
    "adaptive_average_pool",
    "adaptive_max_pool_grad",
    "adaptive_average_pool_grad",
    "max_unpool_grad",
    "fractional_starts",
    "fractional_max_pool",
    "fractional_max_pool_grad",
    "lp_pool_grad",
    "roi_pool_grad",
    "torchvision_roi_pool_grad",
    "quantized_average_pool",
    "integer_adaptive_average_pool",
]


# --------------------------------------------------------------------------------------
# parameters
# --------------------------------------------------------------------------------------


def _params(k, window_size, strides, start_padding, end_padding, dilations):
    window = [int(v) for v in window_size]
    if len(window) != k:
        raise ValueError(f"window_size has {len(window)} entries, expected {k}")

    def fill(v, default, name):
        v = [default] * k if v is None else [int(a) for a in v]
        if len(v) != k:
            raise ValueError(f"{name} has {len(v)} entries, expected {k}")
        return v

    strides = fill(strides, 1, "strides")
    start = fill(start_padding, 0, "start_padding")
    end = fill(end_padding, 0, "end_padding")
    dil = fill(dilations, 1, "dilations")
    if any(v < 1 for v in window):
        raise ValueError("window_size entries must be >= 1")
    if any(v < 1 for v in strides):
        raise ValueError("strides entries must be >= 1")
    if any(v < 1 for v in dil):
        raise ValueError("dilations entries must be >= 1")
    if any(v < 0 for v in start + end):
        raise ValueError("padding entries must be >= 0")
    return window, strides, start, end, dil


def output_sizes(input_sizes, window_size, strides=None, start_padding=None,
                 end_padding=None, dilations=None):
    """Output sizes by the dilated-extent formula.

    For each spatial dimension: ``extent = (window - 1) * dilation + 1`` and
    ``out = (in + start_pad + end_pad - extent) // stride + 1``.

    ``input_sizes`` may be the full sizes ``{N, C, spatial...}`` (full sizes are
    returned) or only the spatial sizes (spatial sizes are returned).  Raises
    ``ValueError`` when an output size would be < 1.
    """
    sizes = [int(v) for v in input_sizes]
    k = len(window_size)
    if len(sizes) == k + 2:
        lead, spatial = sizes[:2], sizes[2:]
    elif len(sizes) == k:
        lead, spatial = [], sizes
    else:
        raise ValueError(f"input_sizes has {len(sizes)} entries; window_size has {k}")
    window, strides, start, end, dil = _params(
        k, window_size, strides, start_padding, end_padding, dilations)
    out = []
    for i in range(k):
        extent = (window[i] - 1) * dil[i] + 1
        padded = spatial[i] + start[i] + end[i]
        if padded < extent:
            raise ValueError(f"dimension {i}: window extent {extent} exceeds padded size {padded}")
        out.append((padded - extent) // strides[i] + 1)
    return tuple(lead + out)


# --------------------------------------------------------------------------------------
# window machinery
# --------------------------------------------------------------------------------------


class _Windows:
    """The windows of one pooling, described per spatial dimension.

    For spatial dimension ``i`` and output position ``o``, tap ``t`` (0 <= t < taps[i])
    reads input coordinate ``first[i][o] + t * step[i]``; that tap covers an input element
    iff the coordinate lies in ``[lo[i][o], hi[i][o])``.  A window's covered elements are
    the product of its per-dimension covered taps.
    """

    def __init__(self, in_spatial, first, step, taps, lo, hi):
        self.in_spatial = tuple(int(v) for v in in_spatial)
        self.first = [np.asarray(f, dtype=np.int64) for f in first]
        self.step = [int(s) for s in step]
        self.taps = [int(t) for t in taps]
        self.lo = [np.asarray(v, dtype=np.int64) for v in lo]
        self.hi = [np.asarray(v, dtype=np.int64) for v in hi]
        self.out_spatial = tuple(len(f) for f in self.first)

    @classmethod
    def fixed(cls, in_spatial, window, strides, start, end, dil):
        out = output_sizes(in_spatial, window, strides, start, end, dil)
        first = [np.arange(out[i]) * strides[i] - start[i] for i in range(len(out))]
        lo = [np.zeros(out[i]) for i in range(len(out))]
        hi = [np.full(out[i], in_spatial[i]) for i in range(len(out))]
        return cls(in_spatial, first, dil, window, lo, hi)

    @classmethod
    def bins(cls, in_spatial, begin, finish):
        """Windows that are contiguous bins ``[begin[i][o], finish[i][o])``."""
        begin = [np.asarray(b, dtype=np.int64) for b in begin]
        finish = [np.asarray(f, dtype=np.int64) for f in finish]
        taps = [int(max(1, (f - b).max(initial=1))) for b, f in zip(begin, finish)]
        step = [1] * len(begin)
        lo = [np.maximum(b, 0) for b in begin]
        hi = [np.minimum(f, n) for f, n in zip(finish, in_spatial)]
        return cls(in_spatial, begin, step, taps, lo, hi)

    def each_tap(self):
        """Yield ``(index, valid, spatial_flat)`` for every tap in row-major tap order.

        ``index`` is a tuple of broadcastable (outer-product style) integer arrays, clipped to the
        input, for indexing the spatial dims; ``valid`` (shape ``out_spatial``) says which
        windows this tap actually covers; ``spatial_flat`` (shape ``out_spatial``) is the
        row-major flat position of the tap inside one (n, c) plane (meaningful where valid).
        """
        k = len(self.out_spatial)
        for tap in itertools.product(*[range(t) for t in self.taps]):
            coords, masks = [], []
            for i in range(k):
                c = self.first[i] + tap[i] * self.step[i]
                masks.append((c >= self.lo[i]) & (c < self.hi[i]))
                coords.append(np.clip(c, 0, self.in_spatial[i] - 1))
            index = _outer(coords)
            valid = np.ones(self.out_spatial, dtype=bool)
            for m in _outer(masks):
                valid = valid & m
            spatial_flat = np.zeros(self.out_spatial, dtype=np.int64)
            for i in range(k):
                spatial_flat = spatial_flat * self.in_spatial[i] + index[i]
            yield index, valid, spatial_flat

    def counts(self):
        """Number of input elements each window covers (shape ``out_spatial``)."""
        per_dim = []
        for i in range(len(self.out_spatial)):
            c = self.first[i][:, None] + np.arange(self.taps[i])[None, :] * self.step[i]
            inside = (c >= self.lo[i][:, None]) & (c < self.hi[i][:, None])
            per_dim.append(inside.sum(axis=1))
        total = np.ones(self.out_spatial, dtype=np.int64)
        for v in _outer(per_dim):
            total = total * v
        return total

    def require_coverage(self):
        if self.out_spatial and (self.counts() == 0).any():
            raise ValueError("a window covers no input element (invalid description)")


def _outer(arrays):
    """Reshape 1-D arrays so that they broadcast against each other as an outer product
    (like np.ix_, but boolean arrays stay boolean)."""
    k = len(arrays)
    return tuple(np.asarray(a).reshape((1,) * i + (-1,) + (1,) * (k - 1 - i))
                 for i, a in enumerate(arrays))


def _as_input(x):
    x = np.asarray(x)
    if x.ndim not in (3, 4, 5):
        raise ValueError(f"input must have 3, 4 or 5 dims {{N, C, [D,] [H,] W}}, got {x.ndim}")
    return x


def _plane_base(n, c, plane, k):
    """Flat index of element 0 of every (n, c) plane, shaped (N, C, 1...)."""
    base = (np.arange(n, dtype=np.int64)[:, None] * c + np.arange(c, dtype=np.int64)[None, :]) * plane
    return base.reshape((n, c) + (1,) * k)


def _gather(x, index):
    return x[(slice(None), slice(None)) + tuple(index)]


def _max_over(x, windows):
    """Max and flat argmax of every window of ``windows`` over ``x`` ({N, C, spatial...})."""
    n, c = x.shape[:2]
    k = x.ndim - 2
    plane = int(np.prod(x.shape[2:], dtype=np.int64))
    base = _plane_base(n, c, plane, k)
    shape = (n, c) + windows.out_spatial
    is_float = np.issubdtype(x.dtype, np.floating) or x.dtype.name == "bfloat16"   # (ml_dtypes': kind 'V')

    best = np.zeros(shape, dtype=x.dtype)
    best_idx = np.full(shape, -1, dtype=np.int64)
    have = np.zeros(shape, dtype=bool)
    for index, valid, spatial_flat in windows.each_tap():
        vals = _gather(x, index)
        idx = base + spatial_flat
        lower = idx < best_idx
        if is_float:
            vnan, bnan = np.isnan(vals), np.isnan(best)
            # NaN beats every number; among two NaNs or two equal numbers the lower index wins
            better = (vnan & ~bnan) | (vnan & bnan & lower)
            with np.errstate(invalid="ignore"):   # (ml_dtypes' bfloat16 warns comparing NaN; handled above)
                better |= ~vnan & ~bnan & ((vals > best) | ((vals == best) & lower))
        else:
            better = (vals > best) | ((vals == best) & lower)
        take = valid & (~have | better)
        best = np.where(take, vals, best)
        best_idx = np.where(take, idx, best_idx)
        have |= take
    if not have.all():
        raise ValueError("a window covers no input element (invalid description)")
    return best, best_idx


# --------------------------------------------------------------------------------------
# forward pooling
# --------------------------------------------------------------------------------------


def _fixed_windows(x, window_size, strides, start_padding, end_padding, dilations):
    k = x.ndim - 2
    window, strides, start, end, dil = _params(
        k, window_size, strides, start_padding, end_padding, dilations)
    return _Windows.fixed(x.shape[2:], window, strides, start, end, dil), window


def max_pool(x, window_size, strides=None, start_padding=None, end_padding=None,
             dilations=None):
    """Max pooling -> ``(y, indices)``.

    ``y`` has the input's dtype (values copied exactly); ``indices`` are int64 flat
    logical input positions (see the module docstring for the max rule).
    """
    x = _as_input(x)
    windows, _ = _fixed_windows(x, window_size, strides, start_padding, end_padding, dilations)
    return _max_over(x, windows)


def _sum_over(x, windows, fn=None):
    """Float64 sum over every window of ``fn(x_as_float64)`` restricted to covered elements."""
    n, c = x.shape[:2]
    total = np.zeros((n, c) + windows.out_spatial, dtype=np.float64)
    for index, valid, _ in windows.each_tap():
        vals = _gather(x, index).astype(np.float64)
        if fn is not None:
            vals = fn(vals)
        total += np.where(valid, vals, 0.0)
    return total


def _average_divisor(windows, in_spatial, window, strides, start, end, dil, include_padding,
                     counted_end_padding, divisor_override):
    """Divisor of every window (shape ``out_spatial``, float64).

    ``divisor_override`` (a positive int) wins; else with ``include_padding`` the taps that
    fall inside ``[-start_pad, in + counted_end)`` per dimension, multiplied
    (``counted_end_padding`` None = all of ``end_padding``: then every tap counts, the
    window's size); else the number of input elements the window covers."""
    if divisor_override is not None:
        return np.full(windows.out_spatial, float(divisor_override))
    if not include_padding:
        return windows.counts().astype(np.float64)
    counted = end if counted_end_padding is None else [int(v) for v in counted_end_padding]
    per_dim = []
    for i, out in enumerate(windows.out_spatial):
        taps = (np.arange(out) * strides[i] - start[i])[:, None] + np.arange(window[i])[None, :] * dil[i]
        per_dim.append(((taps >= -start[i]) & (taps < in_spatial[i] + counted[i])).sum(axis=1))
    divisor = np.ones(windows.out_spatial)
    for v in _outer(per_dim):
        divisor = divisor * v
    return divisor


def average_pool(x, window_size, strides=None, start_padding=None, end_padding=None,
                 dilations=None, include_padding=False, counted_end_padding=None, divisor_override=None):
    """Average pooling in float64.

    Divisor: ``divisor_override`` where given; else ``prod(window_size)`` when
    ``include_padding`` (counting only ``counted_end_padding`` of the end padding where
    given), else the number of input elements the (dilated) window covers.
    """
    x = _as_input(x)
    k = x.ndim - 2
    window, strides, start, end, dil = _params(k, window_size, strides, start_padding, end_padding, dilations)
    windows = _Windows.fixed(x.shape[2:], window, strides, start, end, dil)
    windows.require_coverage()
    total = _sum_over(x, windows)
    return total / _average_divisor(windows, x.shape[2:], window, strides, start, end, dil, include_padding,
                                    counted_end_padding, divisor_override)


def _lp_over(x, windows, p):
    """``(sum |x|^p)^(1/p)`` per window in float64, scaled by the window's largest |x|."""
    p = float(p)
    if not p >= 1:
        raise ValueError("p must be >= 1")
    n, c = x.shape[:2]
    shape = (n, c) + windows.out_spatial
    scale = np.zeros(shape, dtype=np.float64)   # largest |x| in the window
    any_nan = np.zeros(shape, dtype=bool)
    for index, valid, _ in windows.each_tap():
        a = np.abs(_gather(x, index).astype(np.float64))
        any_nan |= valid & np.isnan(a)
        scale = np.where(valid & (a > scale), a, scale)
    safe = np.where((scale > 0) & np.isfinite(scale), scale, 1.0)
    acc = np.zeros(shape, dtype=np.float64)
    for index, valid, _ in windows.each_tap():
        a = np.abs(_gather(x, index).astype(np.float64))
        r = a / safe
        term = r if p == 1.0 else (r * r if p == 2.0 else np.power(r, p))
        acc += np.where(valid & ~np.isnan(a), term, 0.0)
    root = acc if p == 1.0 else (np.sqrt(acc) if p == 2.0 else np.power(acc, 1.0 / p))
    y = np.where(scale > 0, scale * root, 0.0)
    y = np.where(np.isinf(scale), np.inf, y)
    y = np.where(any_nan, np.nan, y)
    return y


def lp_pool(x, window_size, strides=None, start_padding=None, end_padding=None,
            dilations=None, p=2):
    """Lp pooling ``(sum |x|^p)^(1/p)`` over covered input elements, in float64.

    Computed as ``m * (sum (|x|/m)^p)^(1/p)`` with ``m`` the window's largest |x|, so
    neither overflow nor underflow occurs where the result is representable.  An all-zero
    window gives 0; a NaN in the window gives NaN; otherwise an infinity gives +inf.
    """
    x = _as_input(x)
    windows, _ = _fixed_windows(x, window_size, strides, start_padding, end_padding, dilations)
    windows.require_coverage()
    return _lp_over(x, windows, p)


# --------------------------------------------------------------------------------------
# gradients and unpooling
# --------------------------------------------------------------------------------------


def max_pool_grad(x, dy, window_size, strides=None, start_padding=None, end_padding=None,
                  dilations=None):
    """Max pooling gradient in float64: zero except that each window's ``dy`` is added at
    that window's argmax (forward max rule).  Overlapping windows sum."""
    x = _as_input(x)
    _, idx = max_pool(x, window_size, strides, start_padding, end_padding, dilations)
    dy = np.asarray(dy)
    if dy.shape != idx.shape:
        raise ValueError(f"dy has shape {dy.shape}, the forward output has {idx.shape}")
    dx = np.zeros(x.size, dtype=np.float64)
    np.add.at(dx, idx.ravel(), dy.astype(np.float64).ravel())
    return dx.reshape(x.shape)


def average_pool_grad(dy, input_sizes, window_size, strides=None, start_padding=None,
                      end_padding=None, dilations=None, include_padding=False, counted_end_padding=None,
                      divisor_override=None):
    """Average pooling gradient in float64: each window's ``dy / divisor`` is added to every
    input element the window covers (divisor as in :func:`average_pool`).

    ``input_sizes`` are the forward input's full sizes ``{N, C, spatial...}``."""
    dy = np.asarray(dy)
    input_sizes = tuple(int(v) for v in input_sizes)
    if len(input_sizes) not in (3, 4, 5):
        raise ValueError("input_sizes must have 3, 4 or 5 entries")
    k = len(input_sizes) - 2
    window, strides, start, end, dil = _params(
        k, window_size, strides, start_padding, end_padding, dilations)
    expected = output_sizes(input_sizes, window, strides, start, end, dil)
    if dy.shape != expected:
        raise ValueError(f"dy has shape {dy.shape}, the forward output has {expected}")
    windows = _Windows.fixed(input_sizes[2:], window, strides, start, end, dil)
    windows.require_coverage()
    share = dy.astype(np.float64) / _average_divisor(windows, input_sizes[2:], window, strides, start, end, dil,
                                                     include_padding, counted_end_padding, divisor_override)
    n, c = input_sizes[:2]
    plane = int(np.prod(input_sizes[2:], dtype=np.int64))
    base = _plane_base(n, c, plane, k)
    dx = np.zeros(int(np.prod(input_sizes, dtype=np.int64)), dtype=np.float64)
    for _, valid, spatial_flat in windows.each_tap():
        idx = base + spatial_flat
        sel = np.broadcast_to(valid, idx.shape)
        np.add.at(dx, idx[sel], share[sel])
    return dx.reshape(input_sizes)


def max_unpool(x, indices, output_sizes):
    """Max unpooling: zeros of ``x``'s dtype except ``out.flat[indices.flat[j]] = x.flat[j]``.

    Where indices repeat, the largest ``j`` wins; an index outside ``[0, out.size)`` is
    ignored.  ``output_sizes`` is the full output shape ``{N, C, spatial...}`` or only its
    spatial part (N and C are then taken from ``x``).
    """
    x = _as_input(x)
    indices = np.asarray(indices)
    if indices.shape != x.shape:
        raise ValueError(f"indices have shape {indices.shape}, x has {x.shape}")
    sizes = tuple(int(v) for v in output_sizes)
    if len(sizes) == x.ndim - 2:
        sizes = x.shape[:2] + sizes
    if len(sizes) != x.ndim:
        raise ValueError("output_sizes must give the output's full or spatial sizes")
    size = int(np.prod(sizes, dtype=np.int64))
    flat_idx = indices.ravel()
    if np.issubdtype(flat_idx.dtype, np.signedinteger):
        inside = (flat_idx >= 0) & (flat_idx < size)
    else:  # unsigned: compare without any conversion that could wrap
        inside = flat_idx < np.uint64(size)
    targets = flat_idx[inside].astype(np.int64)
    sources = np.nonzero(inside)[0].astype(np.int64)
    winner = np.full(size, -1, dtype=np.int64)
    np.maximum.at(winner, targets, sources)   # largest j per output element
    out = np.zeros(size, dtype=x.dtype)
    hit = winner >= 0
    out[hit] = x.ravel()[winner[hit]]
    return out.reshape(sizes)


# --------------------------------------------------------------------------------------
# variable-window pooling
# --------------------------------------------------------------------------------------


def _round_half_away(v):
    """Round a finite float to the nearest integer, halves away from zero, exactly.

    (Python floats hold every float32 value exactly, and ``a - floor(a)`` is exact.)"""
    a = abs(float(v))
    whole = math.floor(a)
    r = whole + 1 if a - whole >= 0.5 else whole
    return int(r) if v >= 0 else -int(r)


def roi_pool(x, rois, pooled_size, spatial_scale=1.0):
    """DirectML ROI_POOLING -> ``{R, C, ph, pw}`` of ``x``'s dtype.

    For each ROI ``[batch, x1, y1, x2, y2]`` (x indexes W, y indexes H):

    * corners: ``x1 = round(x1 * spatial_scale)`` etc.  The product is formed in float32
      (ROI value and spatial_scale both as float32, one correctly rounded multiply, as an
      f32 shader does) and ``round`` goes half away from zero (Caffe/DirectML).
    * region size ``max(x2 - x1 + 1, 1)`` (Caffe's guard; reversed corners therefore give a
      one-element-wide region starting at x1), likewise for y.
    * bin ``i`` spans ``[floor(i*size/pooled) + x1, ceil((i+1)*size/pooled) + x1)``, exact
      integer arithmetic, clamped to ``[0, W]`` (resp. ``[0, H]``).
    * output = max over the bin (forward max rule: NaN wins); an empty bin gives 0.

    Documented choices for ROIs that are data errors (never a reason to read outside x):

    * batch index: the ROI's batch value truncated toward zero (C cast, as Caffe does);
      if it is not finite or the truncated value lies outside ``[0, N)``, the whole ROI's
      output is 0.
    * a corner whose float32 product with spatial_scale is not finite (NaN, +-inf, or an
      overflow) also makes the ROI's output 0.
    """
    x = np.asarray(x)
    if x.ndim != 4:
        raise ValueError("roi_pool input must be {N, C, H, W}")
    rois = np.asarray(rois)
    if rois.ndim == 4 and rois.shape[:2] == (1, 1):
        rois = rois[0, 0]
    if rois.ndim != 2 or rois.shape[1] != 5:
        raise ValueError(f"rois must be (R, 5) or {{1, 1, R, 5}}, got {rois.shape}")
    ph, pw = (int(v) for v in pooled_size)
    if ph < 1 or pw < 1:
        raise ValueError("pooled_size entries must be >= 1")
    return _roi_max(x, rois, ph, pw, spatial_scale)[0]


def _roi_max(x, rois, ph, pw, spatial_scale):
    """(roi_pool's output, the flat logical input index of each bin's maximum: -1 for an
    empty bin or an invalid ROI)."""
    n, c, h, w = x.shape
    scale = np.float32(spatial_scale)
    out = np.zeros((rois.shape[0], c, ph, pw), dtype=x.dtype)
    arg = np.full(out.shape, -1, dtype=np.int64)
    for r, roi in enumerate(rois.astype(np.float32)):
        if not np.all(np.isfinite(roi)):
            continue
        batch = int(np.trunc(roi[0]))
        if not 0 <= batch < n:
            continue
        with np.errstate(over="ignore"):
            corners = roi[1:] * scale          # float32 products, correctly rounded
        if not np.all(np.isfinite(corners)):
            continue
        cx1, cy1, cx2, cy2 = (_round_half_away(v) for v in corners)
        rh = max(cy2 - cy1 + 1, 1)
        rw = max(cx2 - cx1 + 1, 1)
        hs = [min(max((i * rh) // ph + cy1, 0), h) for i in range(ph)]
        he = [min(max(-((-(i + 1) * rh) // ph) + cy1, 0), h) for i in range(ph)]
        ws = [min(max((j * rw) // pw + cx1, 0), w) for j in range(pw)]
        we = [min(max(-((-(j + 1) * rw) // pw) + cx1, 0), w) for j in range(pw)]
        plane = x[batch:batch + 1]
        windows = _Windows.bins((h, w), [hs, ws], [he, we])
        best, idx = _max_over_allow_empty(plane, windows)
        out[r] = best[0]
        arg[r] = np.where(idx[0] >= 0, idx[0] + batch * c * h * w, -1)
    return out, arg


def _max_over_allow_empty(x, windows):
    """Like :func:`_max_over`, but an empty window yields 0 (ROI pooling's rule)."""
    counts = windows.counts()
    if (counts > 0).all():
        return _max_over(x, windows)
    # give every empty window a dummy valid range, then zero it afterwards
    lo = [v.copy() for v in windows.lo]
    hi = [v.copy() for v in windows.hi]
    first = [v.copy() for v in windows.first]
    for i in range(len(lo)):
        empty = hi[i] <= lo[i]
        first[i] = np.where(empty, 0, first[i])
        lo[i] = np.where(empty, 0, lo[i])
        hi[i] = np.where(empty, 1, hi[i])
    patched = _Windows(windows.in_spatial, first, windows.step, windows.taps, lo, hi)
    best, idx = _max_over(x, patched)
    empty = np.broadcast_to(counts == 0, best.shape)
    best = np.where(empty, np.zeros((), dtype=x.dtype), best)
    idx = np.where(empty, -1, idx)
    return best, idx


def _adaptive_windows(x, output_size):
    k = x.ndim - 2
    if np.ndim(output_size) == 0:
        output_size = [int(output_size)] * k
    out = [int(v) for v in output_size]
    if len(out) != k:
        raise ValueError(f"output_size has {len(out)} entries, expected {k}")
    if any(v < 1 for v in out):
        raise ValueError("output_size entries must be >= 1")
    begin, finish = [], []
    for i in range(k):
        size = x.shape[2 + i]
        o = np.arange(out[i], dtype=np.int64)
        begin.append((o * size) // out[i])                    # floor(i * in / out)
        finish.append(-((-(o + 1) * size) // out[i]))         # ceil((i + 1) * in / out)
    return _Windows.bins(x.shape[2:], begin, finish)


def adaptive_max_pool(x, output_size):
    """PyTorch-style adaptive max pooling -> ``(y, indices)`` (int64 flat logical indices).

    Along each spatial dimension output ``i`` pools input
    ``[floor(i*in/out), ceil((i+1)*in/out))``; the forward max rule applies."""
    x = _as_input(x)
    return _max_over(x, _adaptive_windows(x, output_size))


def adaptive_average_pool(x, output_size):
    """PyTorch-style adaptive average pooling, in float64 (mean over each bin)."""
    x = _as_input(x)
    windows = _adaptive_windows(x, output_size)
    return _sum_over(x, windows) / windows.counts().astype(np.float64)


def torchvision_roi_pool(x, rois, pooled_size, spatial_scale=1.0):
    """``torchvision.ops.roi_pool`` as its CPU kernel (roi_pool_kernel.cpp) computes it, for
    float32: per ROI ``[batch, x1, y1, x2, y2]`` the corners ``round(c * spatial_scale)``
    (float32 product, halves away from zero), region ``max(end - start + 1, 1)``, bin size
    ``float32(region) / float32(pooled)``, bin ``[floor(i * bin), ceil((i + 1) * bin))`` (float32
    products) plus the start, clamped to the input; the max over the bin starting from
    -FLT_MAX with ``>`` (so NaN is skipped), 0 for an empty bin.  Loops, as the kernel."""
    return _torchvision_roi_max(x, rois, pooled_size, spatial_scale)[0]


def _torchvision_roi_max(x, rois, pooled_size, spatial_scale):
    """(torchvision_roi_pool's output, its argmax: the flat index within the input, -1 for an
    empty bin)."""
    x = np.asarray(x, np.float32)
    rois = np.asarray(rois, np.float32)
    _, channels, height, width = x.shape
    pooled_h, pooled_w = pooled_size
    scale = np.float32(spatial_scale)
    out = np.zeros((len(rois), channels, pooled_h, pooled_w), np.float32)
    arg = np.full(out.shape, -1, np.int64)
    lowest = -np.finfo(np.float32).max
    for r, roi in enumerate(rois):
        batch = int(roi[0])
        start_w, start_h, end_w, end_h = (int(_round_half_away(np.float32(c * scale))) for c in roi[1:])
        bin_h = np.float32(max(end_h - start_h + 1, 1)) / np.float32(pooled_h)
        bin_w = np.float32(max(end_w - start_w + 1, 1)) / np.float32(pooled_w)
        for ph in range(pooled_h):
            for pw in range(pooled_w):
                h0 = min(max(int(np.floor(np.float32(ph) * bin_h)) + start_h, 0), height)
                h1 = min(max(int(np.ceil(np.float32(ph + 1) * bin_h)) + start_h, 0), height)
                w0 = min(max(int(np.floor(np.float32(pw) * bin_w)) + start_w, 0), width)
                w1 = min(max(int(np.ceil(np.float32(pw + 1) * bin_w)) + start_w, 0), width)
                if h1 <= h0 or w1 <= w0:
                    continue
                for c in range(channels):
                    best, where = lowest, -1
                    for hh in range(h0, h1):
                        for ww in range(w0, w1):
                            if x[batch, c, hh, ww] > best:
                                best, where = x[batch, c, hh, ww], ((batch * channels + c) * height + hh) * width + ww
                    out[r, c, ph, pw] = best
                    arg[r, c, ph, pw] = where
    return out, arg


def torchvision_roi_pool_grad(x, rois, dy, pooled_size, spatial_scale=1.0):
    """torchvision's roi_pool backward as its CPU kernel computes it: each bin's dy added at
    its argmax (of :func:`torchvision_roi_pool`), in float32, in the order of its loops
    (ROIs, channels, bins)."""
    _, arg = _torchvision_roi_max(x, rois, pooled_size, spatial_scale)
    dy = np.asarray(dy, np.float32)
    dx = np.zeros(np.asarray(x).size, np.float32)
    for where, g in zip(arg.ravel(), dy.ravel()):
        if where >= 0:
            dx[where] = np.float32(dx[where] + g)
    return dx.reshape(np.shape(x))


def _torchvision_ps_bins(roi, pooled_size, spatial_scale, height, width, last):
    """torchvision's ps_roi_pool bins of one ROI: {(ph, pw): (h0, h1, w0, w1)}, clamped to
    [0, height - 1] and [0, width - 1] (``last``: its forward) or to [0, height] and
    [0, width] (its backward)."""
    scale = np.float32(spatial_scale)
    start_w, start_h, end_w, end_h = (int(_round_half_away(np.float32(np.float32(c) * scale))) for c in roi[1:])
    pooled_h, pooled_w = pooled_size
    bin_h = np.float32(max(end_h - start_h, 1)) / np.float32(pooled_h)   # no + 1, unlike roi_pool
    bin_w = np.float32(max(end_w - start_w, 1)) / np.float32(pooled_w)
    top_h, top_w = (height - 1, width - 1) if last else (height, width)
    bins = {}
    for ph in range(pooled_h):
        for pw in range(pooled_w):
            h0 = min(max(int(np.floor(np.float32(ph) * bin_h)) + start_h, 0), top_h)
            h1 = min(max(int(np.ceil(np.float32(ph + 1) * bin_h)) + start_h, 0), top_h)
            w0 = min(max(int(np.floor(np.float32(pw) * bin_w)) + start_w, 0), top_w)
            w1 = min(max(int(np.ceil(np.float32(pw + 1) * bin_w)) + start_w, 0), top_w)
            bins[ph, pw] = (h0, h1, w0, w1)
    return bins


def torchvision_ps_roi_pool(x, rois, pooled_size, spatial_scale=1.0):
    """``torchvision.ops.ps_roi_pool`` as its CPU kernel (ps_roi_pool_kernel.cpp) computes
    it, in float32: per ROI ``[batch, x1, y1, x2, y2]`` the corners ``round(c * spatial_scale)``,
    region ``max(end - start, 1)``, bin size ``float32(region) / float32(pooled)``, bin
    ``[floor(i * bin), ceil((i + 1) * bin))`` plus the start, clamped to [0, size - 1] (so the
    last row and column are never read); output channel c of bin (ph, pw) the float32 sum of
    input channel ``(c * pooled_h + ph) * pooled_w + pw`` over the bin (rows, then columns)
    divided by its area, 0 for an empty bin."""
    x = np.asarray(x, np.float32)
    rois = np.asarray(rois, np.float32)
    _, channels, height, width = x.shape
    pooled_h, pooled_w = pooled_size
    channels_out = channels // (pooled_h * pooled_w)
    out = np.zeros((len(rois), channels_out, pooled_h, pooled_w), np.float32)
    for r, roi in enumerate(rois):
        batch = int(roi[0])
        for (ph, pw), (h0, h1, w0, w1) in _torchvision_ps_bins(roi, pooled_size, spatial_scale, height, width,
                                                               True).items():
            if h1 <= h0 or w1 <= w0:
                continue
            for c in range(channels_out):
                plane = x[batch, (c * pooled_h + ph) * pooled_w + pw]
                total = np.float32(0)
                for hh in range(h0, h1):
                    for ww in range(w0, w1):
                        total = np.float32(total + plane[hh, ww])
                out[r, c, ph, pw] = total / np.float32((h1 - h0) * (w1 - w0))
    return out


def torchvision_ps_roi_pool_grad(input_sizes, rois, dy, pooled_size, spatial_scale=1.0):
    """torchvision's ps_roi_pool backward as its CPU kernel computes it: each bin's dy divided
    by the bin's area (float32) added to every element of the bin, the bins clamped to
    [0, size] (not the forward's size - 1), in the order of its loops (ROIs, bins, channels)."""
    rois = np.asarray(rois, np.float32)
    dy = np.asarray(dy, np.float32)
    _, channels, height, width = input_sizes
    pooled_h, pooled_w = pooled_size
    dx = np.zeros(input_sizes, np.float32)
    for r, roi in enumerate(rois):
        batch = int(roi[0])
        for (ph, pw), (h0, h1, w0, w1) in _torchvision_ps_bins(roi, pooled_size, spatial_scale, height, width,
                                                               False).items():
            if h1 <= h0 or w1 <= w0:
                continue
            area = np.float32((h1 - h0) * (w1 - w0))
            for c in range(dy.shape[1]):
                plane = dx[batch, (c * pooled_h + ph) * pooled_w + pw]
                plane[h0:h1, w0:w1] = (plane[h0:h1, w0:w1] + np.float32(dy[r, c, ph, pw] / area)).astype(np.float32)
    return dx


def roi_pool_grad(x, rois, dy, pooled_size, spatial_scale=1.0):
    """ROI pooling gradient (DirectML's bins, :func:`roi_pool`) in float64: zero except each
    bin's dy added at its argmax (forward max rule); empty bins and invalid ROIs add
    nothing."""
    x = np.asarray(x)
    rois = np.asarray(rois)
    if rois.ndim == 4:
        rois = rois[0, 0]
    _, arg = _roi_max(x, rois, *(int(v) for v in pooled_size), spatial_scale)
    dy = np.asarray(dy).astype(np.float64)
    dx = np.zeros(x.size, np.float64)
    keep = arg.ravel() >= 0
    np.add.at(dx, arg.ravel()[keep], dy.ravel()[keep])
    return dx.reshape(x.shape)


# --------------------------------------------------------------------------------------
# gradients of adaptive pooling and of max unpooling
# --------------------------------------------------------------------------------------


def adaptive_max_pool_grad(x, dy):
    """Adaptive max pooling gradient in float64: zero except that each bin's ``dy`` is added
    at the bin's argmax (forward max rule); ``dy``'s spatial sizes are the output size."""
    x = _as_input(x)
    dy = np.asarray(dy)
    if dy.shape[:2] != x.shape[:2] or dy.ndim != x.ndim:
        raise ValueError(f"dy has shape {dy.shape}, x {x.shape}")
    _, idx = adaptive_max_pool(x, dy.shape[2:])
    dx = np.zeros(x.size, dtype=np.float64)
    np.add.at(dx, idx.ravel(), dy.astype(np.float64).ravel())
    return dx.reshape(x.shape)


def adaptive_average_pool_grad(dy, input_sizes):
    """Adaptive average pooling gradient in float64: each bin's ``dy / count`` (count: the
    bin's element count) is added to every input element of the bin."""
    dy = np.asarray(dy)
    input_sizes = tuple(int(v) for v in input_sizes)
    if len(input_sizes) != dy.ndim or tuple(dy.shape[:2]) != input_sizes[:2]:
        raise ValueError(f"dy has shape {dy.shape}, input_sizes are {input_sizes}")
    k = len(input_sizes) - 2
    windows = _adaptive_windows(np.broadcast_to(np.uint8(0), input_sizes), dy.shape[2:])
    share = dy.astype(np.float64) / windows.counts().astype(np.float64)
    n, c = input_sizes[:2]
    base = _plane_base(n, c, int(np.prod(input_sizes[2:], dtype=np.int64)), k)
    dx = np.zeros(int(np.prod(input_sizes, dtype=np.int64)), dtype=np.float64)
    for _, valid, spatial_flat in windows.each_tap():
        idx = base + spatial_flat
        sel = np.broadcast_to(valid, idx.shape)
        np.add.at(dx, idx[sel], share[sel])
    return dx.reshape(input_sizes)


def max_unpool_grad(dy, indices):
    """Max unpooling gradient: ``dx`` of the indices' shape and ``dy``'s dtype, with
    ``dx.flat[j] = dy.flat[indices.flat[j]]`` where j won its index (the largest j naming
    it) and the index lies inside ``dy``; 0 elsewhere.  Values are copied exactly."""
    dy = np.asarray(dy)
    indices = np.asarray(indices)
    size = dy.size
    flat_idx = indices.ravel()
    if np.issubdtype(flat_idx.dtype, np.signedinteger):
        inside = (flat_idx >= 0) & (flat_idx < size)
    else:
        inside = flat_idx < np.uint64(size)
    targets = np.where(inside, flat_idx, 0).astype(np.int64)
    j = np.arange(flat_idx.size, dtype=np.int64)
    winner = np.full(size, -1, dtype=np.int64)
    np.maximum.at(winner, targets[inside], j[inside])
    won = inside & (winner[targets] == j)
    dx = np.zeros(flat_idx.size, dtype=dy.dtype)
    dx[won] = dy.ravel()[targets[won]]
    return dx.reshape(indices.shape)


# --------------------------------------------------------------------------------------
# fractional max pooling, and the gradient of Lp pooling
# --------------------------------------------------------------------------------------


def _rounded(v, sample_type):
    """A float32 value rounded to the samples' type (to nearest, ties to even) and back:
    float16 and bfloat16 arithmetic round every step, as c10's Half and BFloat16 do."""
    v = np.float32(v)
    if sample_type == "float16":
        with np.errstate(over="ignore"):
            return np.float32(np.float16(v))
    if sample_type == "bfloat16":
        bits = int(v.view(np.uint32))
        if bits & 0x7FFFFFFF > 0x7F800000:
            return np.float32(np.nan)
        return np.uint32((((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16) & 0xFFFFFFFF).view(np.float32)
    return v


def fractional_starts(u, size_in, window, out, sample_type="float32"):
    """PyTorch's fractional max pooling windows along one dimension: the start of each of
    ``out`` windows of ``window`` over ``size_in`` inputs for sample ``u`` (any value):
    ``alpha = (in - window) / (out - 1)``, window ``i < out - 1`` at ``int((i + u) * alpha) -
    int(u * alpha)``, the last at ``in - window``; in float32, each step rounded to float16 or
    bfloat16 for those sample types (PyTorch's CPU kernel computes in the input's type).
    ``int`` is C's 32-bit one as x86-64 computes it (NaN and values beyond its range give its
    minimum; the difference wraps); a start outside ``[0, in - window]`` (where PyTorch stops
    with an internal assertion) is clamped into it, as poolgpu does."""
    r = lambda v: _rounded(v, sample_type)  # noqa: E731

    def c_int(v):
        return int(v) if abs(float(v)) < 2**31 else -2**31   # (abs(nan) < x is False)

    starts = []
    if out > 1:
        with np.errstate(over="ignore", invalid="ignore"):
            alpha = r(r(size_in - window) / r(out - 1))
            u = np.float32(u)
            for i in range(out - 1):
                a = r(r(r(i) + u) * alpha)
                b = r(u * alpha)
                start = (c_int(a) - c_int(b) + 2**31) % 2**32 - 2**31
                starts.append(min(max(start, 0), size_in - window))
    starts.append(size_in - window)
    return starts


#: Which sample each spatial dimension takes (PyTorch's order): 2D (W, H), 3D (D, H, W).
_SAMPLE_OF = {2: (1, 0), 3: (0, 1, 2)}


def fractional_max_pool(x, window_size, output_size, samples, sample_type="float32"):
    """Fractional max pooling -> ``(y, indices)`` (int64 flat logical indices): per (n, c)
    plane, windows of ``window_size`` starting where :func:`fractional_starts` puts them for
    the plane's samples (``samples[n, c, _SAMPLE_OF[dims][i]]`` for spatial dimension i);
    the forward max rule."""
    x = _as_input(x)
    samples = np.asarray(samples, np.float32)
    n, c = x.shape[:2]
    k = x.ndim - 2
    plane = int(np.prod(x.shape[2:]))
    y = np.zeros((n, c) + tuple(output_size), x.dtype)
    idx = np.zeros(y.shape, np.int64)
    for a in range(n):
        for b in range(c):
            begin = [np.array(fractional_starts(samples[a, b, _SAMPLE_OF[k][i]], x.shape[2 + i], window_size[i],
                                                output_size[i], sample_type)) for i in range(k)]
            finish = [s + window_size[i] for i, s in enumerate(begin)]
            best, where = _max_over(x[a:a + 1, b:b + 1], _Windows.bins(x.shape[2:], begin, finish))
            y[a, b] = best[0, 0]
            idx[a, b] = where[0, 0] + (a * c + b) * plane
    return y, idx


def fractional_max_pool_grad(x, dy, window_size, samples, sample_type="float32"):
    """Fractional max pooling gradient in float64: zero except each window's dy added at its
    argmax."""
    x = _as_input(x)
    dy = np.asarray(dy)
    _, idx = fractional_max_pool(x, window_size, dy.shape[2:], samples, sample_type)
    dx = np.zeros(x.size, np.float64)
    np.add.at(dx, idx.ravel(), dy.astype(np.float64).ravel())
    return dx.reshape(x.shape)


def lp_pool_grad(x, dy, window_size, strides=None, start_padding=None, end_padding=None, dilations=None, p=2):
    """Lp pooling gradient in float64: each window of result ``y`` (:func:`lp_pool`) adds
    ``dy * sign(x) * (|x| / y)^(p - 1)`` to every input element ``x`` it covers (0 for a
    window of zeros)."""
    x = _as_input(x)
    windows, _ = _fixed_windows(x, window_size, strides, start_padding, end_padding, dilations)
    y = _lp_over(x, windows, p)
    dy = np.asarray(dy).astype(np.float64)
    n, c = x.shape[:2]
    k = x.ndim - 2
    base = _plane_base(n, c, int(np.prod(x.shape[2:])), k)
    flat = x.astype(np.float64).ravel()
    dx = np.zeros(x.size, np.float64)
    for _, valid, spatial_flat in windows.each_tap():
        idx = np.broadcast_to(base + spatial_flat, dy.shape)
        sel = np.broadcast_to(valid, dy.shape)
        v = flat[idx[sel]]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.abs(v) / y[sel]
            factor = ratio ** (float(p) - 1) if p != 1 else np.ones_like(ratio)
            term = np.where(y[sel] == 0, 0.0, dy[sel] * np.sign(v) * factor)
        np.add.at(dx, idx[sel], term)
    return dx.reshape(x.shape)


# --------------------------------------------------------------------------------------
# quantized average pooling
# --------------------------------------------------------------------------------------


def _per_channel(value, c, k, dtype):
    """A scale or zero point (a number, C values or {1, C, 1...}) shaped (1, C, 1...)."""
    v = np.asarray(0 if value is None else value).astype(dtype).reshape(-1)
    return np.broadcast_to(v, (c,)).reshape((1, c) + (1,) * k)


def _window_taps(x, windows):
    """Every window's taps of ``x`` as int64, shaped (N, C, out..., taps) with the taps in
    row-major window order, and whether each covers an input element (out..., taps)."""
    k = len(windows.out_spatial)
    coords, masks = [], []
    for i in range(k):
        c = windows.first[i][:, None] + np.arange(windows.taps[i])[None, :] * windows.step[i]
        masks.append((c >= windows.lo[i][:, None]) & (c < windows.hi[i][:, None]))
        coords.append(np.clip(c, 0, windows.in_spatial[i] - 1))

    def spread(per_dim):  # (out_i, taps_i) per dimension -> (out_1..out_k, taps_1..taps_k)
        shaped = []
        for i, a in enumerate(per_dim):
            shape = [1] * (2 * k)
            shape[i], shape[k + i] = a.shape
            shaped.append(a.reshape(shape))
        return shaped

    index = spread(coords)
    valid = np.ones((), bool)
    for m in spread(masks):
        valid = valid & m
    vals = x[(slice(None), slice(None)) + tuple(index)].astype(np.int64)
    taps = int(np.prod(windows.taps))
    vals = vals.reshape(vals.shape[:2 + k] + (taps,))
    return vals, np.broadcast_to(valid, windows.out_spatial + tuple(windows.taps)).reshape(windows.out_spatial + (taps,))


def quantized_average_pool(x, x_scale, x_zero_point, y_scale, y_zero_point, window_size, strides=None,
                           start_padding=None, end_padding=None, dilations=None, include_padding=False,
                           counted_end_padding=None, divisor_override=None, rounding="directml",
                           vectorized_channels=0):
    """Quantized average pooling of int8/uint8 ``x`` by the rules of docs/semantics.md, every
    float operation in float32 (NumPy's float32 arithmetic rounds each to nearest even):

    * "directml": S = the float32 sum over the covered elements, in row-major window order,
      of float32((x - x_zero) * x_scale); y = rint(S / d / y_scale) + y_zero;
    * "onnxruntime": y = rint(S / d / y_scale + y_zero);
    * "onnxruntime_global": A = sum(x) - x_zero * n (integers, n the covered count);
      y = rint(A * (x_scale / (y_scale * n))) + y_zero;
    * "pytorch": A as above; p = A * (x_scale / y_scale / d); y = rint(p + y_zero), or in
      channels below ``vectorized_channels`` rint(p) + y_zero;

    d the average's divisor; results clipped to the input type's range."""
    x = _as_input(x)
    n, c = x.shape[:2]
    k = x.ndim - 2
    f32 = np.float32
    window, strides, start, end, dil = _params(k, window_size, strides, start_padding, end_padding, dilations)
    windows = _Windows.fixed(x.shape[2:], window, strides, start, end, dil)
    windows.require_coverage()
    xs, ys = _per_channel(x_scale, c, k, f32), _per_channel(y_scale, c, k, f32)
    xz, yz = _per_channel(x_zero_point, c, k, np.int64), _per_channel(y_zero_point, c, k, np.int64)
    vals, valid = _window_taps(x, windows)   # (N, C, out..., taps in row-major order)
    xs_t, xz_t = xs[..., None], xz[..., None]
    terms = np.where(valid, xs_t * (vals - xz_t).astype(f32), f32(0))
    s = np.cumsum(terms, axis=-1, dtype=f32)[..., -1]   # (cumsum adds in order, one rounding each)
    total = np.where(valid, vals, 0).sum(axis=-1)
    count = windows.counts()
    d = _average_divisor(windows, x.shape[2:], window, strides, start, end, dil, include_padding,
                         counted_end_padding, divisor_override).astype(f32)
    if rounding in ("directml", "onnxruntime"):
        t = s / d / ys
        q = np.rint(t) + yz if rounding == "directml" else np.rint(t + yz.astype(f32))
    else:
        a = (total - xz * count).astype(f32)
        if rounding == "onnxruntime_global":
            q = np.rint(a * (xs / (ys * count.astype(f32)))) + yz
        elif rounding == "pytorch":
            p = a * (xs / ys / d)
            vector = (np.arange(c) < vectorized_channels).reshape((1, c) + (1,) * k)
            q = np.where(vector, np.rint(p) + yz, np.rint(p + yz.astype(f32)))
        else:
            raise ValueError(f"unknown rounding {rounding!r}")
    info = np.iinfo(x.dtype)
    return np.clip(q, info.min, info.max).astype(x.dtype)


def integer_adaptive_average_pool(x, output_size):
    """Adaptive average pooling of int8/uint8 values as PyTorch's quantized kernel computes it
    for contiguous inputs: rint(float32(sum of the bin) * r), r = 1 / kD / kH / kW in float32
    (kD, kH, kW the bin's sizes; 1 for missing dimensions)."""
    x = _as_input(x)
    f32 = np.float32
    windows = _adaptive_windows(x, output_size)
    total = _sum_over(x.astype(np.int64), windows).astype(np.int64)
    lengths = [hi - lo for lo, hi in zip(windows.lo, windows.hi)]
    lengths = [np.ones(1, np.int64)] * (3 - len(lengths)) + lengths
    r = np.ones((), f32)
    for v in _outer(lengths):
        r = r / v.astype(f32)
    r = r.reshape(windows.out_spatial)
    return np.rint(total.astype(f32) * r).astype(x.dtype)

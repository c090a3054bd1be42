"""torchvision's ``roi_pool`` on poolgpu's ROI pooling."""

from __future__ import annotations

from typing import NamedTuple, Optional, Sequence, Union

import numpy as np
import torch

from ..arguments import array, number
from ..descs import RoiPoolingDesc, RoiPoolingGradDesc
from ..device import Device
from ..tensor import Tensor
from ..dtypes import DataType
from ..errors import ValidationError
from ..tensor_desc import TensorDesc
from ._arguments import checked, sizes_arg
from ._call import BFLOAT16_BITS, FLOATS, Call, Input, Output, Plan, Size, as_float, as_host, gradient_plan, host_values, of_type
from ._ops import define_family, dispatch

__all__ = ["roi_pool"]


def _host(b) -> np.ndarray:
    if isinstance(b, torch.Tensor):
        b = b.detach().cpu()
        return (b.float() if b.dtype == torch.bfloat16 else b).numpy()
    return as_float(host_values(b)) if isinstance(b, Tensor) else array(b, "boxes", ranks=None, typed=False, empty=True)


def _boxes_arg(boxes, input):
    """torchvision's boxes, a (K, 5) tensor or a list of (L, 4) tensors (one per image), as
    one (K, 5) of [batch, x1, y1, x2, y2]: a torch tensor for a torch input (the operator's
    argument, joined as torchvision joins a list), else a float32 array."""
    if isinstance(boxes, (list, tuple)):
        parts = [b if isinstance(b, torch.Tensor) else _host(b) for b in boxes]
        for b in parts:
            if b.ndim != 2 or b.shape[1] != 4:
                raise ValidationError("boxes", f"roi_pool: each tensor of a list of boxes is (L, 4), "
                                               f"got {tuple(b.shape)}")
        if isinstance(input, torch.Tensor) and all(isinstance(b, torch.Tensor) for b in parts) and parts:
            return torch.cat([torch.cat([torch.full_like(b[:, :1], i), b], dim=1) for i, b in enumerate(parts)])
        parts = [np.concatenate([np.full((len(b), 1), i, np.float32), _host(b).astype(np.float32)], axis=1)
                 for i, b in enumerate(parts)]
        boxes = np.concatenate(parts) if parts else np.zeros((0, 5), np.float32)
    elif not isinstance(boxes, torch.Tensor):
        boxes = _host(boxes)
    if boxes.ndim != 2 or boxes.shape[1] != 5:
        raise ValidationError("boxes", f"roi_pool: expected a (K, 5) tensor of [batch, x1, y1, x2, y2] or a list of "
                                       f"(L, 4) tensors, got shape {tuple(boxes.shape)}")
    if isinstance(input, torch.Tensor) and not isinstance(boxes, torch.Tensor):
        return torch.from_numpy(np.ascontiguousarray(boxes, np.float32))
    return boxes


def _round_half_away(v: np.ndarray) -> np.ndarray:
    """C's round() of float32 values (halves away from zero), exact in float64."""
    v = v.astype(np.float64)
    return np.copysign(np.floor(np.abs(v) + 0.5), v)


def _bins(start: np.ndarray, end: np.ndarray, pooled: int, size: int) -> tuple:
    """torchvision's bins along one dimension, (K, pooled) [lo, hi) clamped to [0, size]:
    float32 bin size and products, as its CPU kernel computes them."""
    region = np.maximum(end - start + 1, 1)
    bin_size = region.astype(np.float32) / np.float32(pooled)
    i = np.arange(pooled, dtype=np.float32)
    lo = np.floor(i[None, :] * bin_size[:, None]).astype(np.int64) + start[:, None]
    hi = np.ceil((i[None, :] + np.float32(1)) * bin_size[:, None]).astype(np.int64) + start[:, None]
    return np.clip(lo, 0, size), np.clip(hi, 0, size)


def roi_pool(input: Input, boxes: Union[Input, Sequence[Input]], output_size: Size, spatial_scale: float = 1.0, *,
             device: Optional[Device] = None) -> Output:
    """``torchvision.ops.roi_pool`` on poolgpu: the maximum over each of ``output_size``
    = (h, w) bins of each box.

    The bins are torchvision's, in float32: corners ``round(c * spatial_scale)`` (halves
    away from zero), region ``max(end - start + 1, 1)``, bin size ``region / output_size``,
    bin ``[floor(i * bin) + start, ceil((i + 1) * bin) + start)`` clamped to the input; an
    empty bin gives 0.  A bin holding NaN gives NaN.  Differentiable: the backward adds
    each bin's gradient at its argmax, as torchvision's, in a deterministic gather.

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, H, W); float32, float16 or bfloat16.
    boxes : tensor, or list of tensors
        A (K, 5) tensor of ``[batch, x1, y1, x2, y2]``, or a list of (L, 4) tensors
        ``[x1, y1, x2, y2]``, one per image; in input coordinates (before ``spatial_scale``).
    output_size : int or tuple of int
        (h, w), or one int for both.
    spatial_scale : float, default 1.0
        Scales the box corners to the input's coordinates.
    device : pg.Device, optional, keyword-only
        Where to run: default the pg.Tensor input's device, else ``pg.default_device()``.  Results
        come back on the input's own torch device (CPU, CUDA, ...).

    Returns
    -------
    output
        (K, C, h, w), of the input's kind and data type.

    Raises
    ------
    pg.ValidationError
        For boxes of a wrong shape or a batch index outside the input, a non-positive
        ``output_size``, a ``spatial_scale`` that is no finite number, a ``device`` that is
        not a pg.Device, and a data type poolgpu lacks.
    """
    f = "roi_pool"
    return dispatch(f, input, _boxes_arg(boxes, input), list(sizes_arg(output_size, 2, "output_size", f)),
                    float(checked(f, number, spatial_scale, "spatial_scale")), device=device)


#: The largest integer each type holds exactly, and all below it: ROI corners of the input's
#: type must be exact.
_EXACT_INTEGERS = {np.dtype(np.float32): 2**24, np.dtype(np.float16): 2048, BFLOAT16_BITS: 256}


class _Rois(NamedTuple):
    """How a call's boxes run as DirectML ROI pooling: ``rois`` (R, 5) whose DirectML bins are
    torchvision's, of ``pooled`` bins each: the boxes themselves where their bins agree (and
    their corners are exact in the input's type), else one ROI per bin (pooled (1, 1),
    bins outer, channels inner: ``per_bin``); ``float32``: pool a float32 copy of the input
    (the per-bin corners would not be exact in its type; the maxima are its values, so
    converting back is exact)."""

    rois: np.ndarray
    pooled: tuple
    per_bin: bool
    float32: bool


def _directml_bins(start: np.ndarray, end: np.ndarray, pooled: int, size: int) -> tuple:
    """DirectML's bins along one dimension, (K, pooled), exactly in integers."""
    region = np.maximum(end - start + 1, 1)[:, None]
    i = np.arange(pooled)[None, :]
    lo = i * region // pooled + start[:, None]
    hi = -(-(i + 1) * region // pooled) + start[:, None]
    return np.clip(lo, 0, size), np.clip(hi, 0, size)


def _rois(call: Call, boxes, output_size, spatial_scale) -> _Rois:
    pooled_h, pooled_w = output_size
    n, _, height, width = call.sizes
    rois = _host(boxes).astype(np.float32)
    count = len(rois)
    with np.errstate(all="ignore"):
        batch = np.trunc(rois[:, 0].astype(np.float64))
        scaled = rois[:, 1:] * np.float32(spatial_scale)  # float32 products, as torchvision's
        finite = np.isfinite(scaled).all(axis=1) & np.isfinite(batch)
    if not ((batch >= 0) & (batch < n) | ~np.isfinite(batch)).all():
        raise ValidationError("boxes", f"roi_pool: a box's batch index is outside the input's {n} images")
    corners = np.clip(np.nan_to_num(_round_half_away(scaled)), -2**40, 2**40).astype(np.int64)
    h_lo, h_hi = _bins(corners[:, 1], corners[:, 3], pooled_h, height)
    w_lo, w_hi = _bins(corners[:, 0], corners[:, 2], pooled_w, width)
    exact = _EXACT_INTEGERS[call.dtype]
    if finite.all() and (np.abs(corners) < exact).all() and \
            all(np.array_equal(a, b) for a, b in zip((h_lo, h_hi, w_lo, w_hi),
                                                      _directml_bins(corners[:, 1], corners[:, 3], pooled_h, height)
                                                      + _directml_bins(corners[:, 0], corners[:, 2], pooled_w, width))):
        return _Rois(np.concatenate([batch[:, None], corners], axis=1).astype(np.float32), (pooled_h, pooled_w),
                     False, False)
    # One ROI per bin, its corners the bin's inclusive ends at scale 1, so DirectML's
    # arithmetic gives torchvision's bins exactly; an empty bin (or a box with a
    # non-finite value) gets an invalid batch, which pools nothing and gives 0.
    shape = (count, pooled_h, pooled_w)
    per_bin = np.empty(shape + (5,), np.float32)
    empty = (h_hi <= h_lo)[:, :, None] | (w_hi <= w_lo)[:, None, :] | ~finite[:, None, None]
    per_bin[..., 0] = np.where(empty, -1, np.broadcast_to(np.nan_to_num(batch)[:, None, None], shape))
    per_bin[..., 1] = np.broadcast_to(w_lo[:, None, :], shape)
    per_bin[..., 2] = np.broadcast_to(h_lo[:, :, None], shape)
    per_bin[..., 3] = np.broadcast_to(w_hi[:, None, :] - 1, shape)
    per_bin[..., 4] = np.broadcast_to(h_hi[:, :, None] - 1, shape)
    return _Rois(per_bin.reshape(-1, 5), (1, 1), True, max(height, width) >= exact)


def _input_and_rois(call: Call, layout: _Rois) -> tuple:
    """The input (or its float32 copy) and the ROIs, as RoiPoolingDesc takes them."""
    x = call.upload_host(as_float(call.host()).astype(np.float32)) if layout.float32 else call.tensor()
    rois = layout.rois.reshape(1, 1, -1, 5)
    return x, call.upload_host(of_type(rois, BFLOAT16_BITS) if x.data_type == DataType.BFLOAT16
                               else rois.astype(x.data_type.numpy))


def _result(call: Call, y: Union[Tensor, np.ndarray]) -> tuple:
    """A result of the pooled (float32 copy's) type (a Tensor, or its values: Call.compute)
    in the input's."""
    if y.dtype == np.float32 and call.dtype != np.float32:
        return (of_type(as_host(y), call.dtype),)
    return (y,)


def _plan(function, input, boxes, output_size, spatial_scale, *, device):
    call = Call(input, function, 2, FLOATS, device, ranks=(4,))
    call.require_nonzero()
    pooled_h, pooled_w = output_size
    c = call.sizes[1]
    out_sizes = (boxes.shape[0], c, pooled_h, pooled_w)

    def forward():
        layout = _rois(call, boxes, output_size, spatial_scale)
        x, rois = _input_and_rois(call, layout)

        def per_bin(y: Tensor) -> Tensor:   # (K * bins, C, 1, 1): bins outer, channels inner
            view = TensorDesc(y.data_type, out_sizes, (pooled_h * pooled_w * c, 1, pooled_w * c, c),
                              y.desc.total_size_in_bytes)
            return call.device.wrap(y.buffer, view, y.offset)

        desc = RoiPoolingDesc(x.desc, rois.desc, spatial_scale=1.0, pooled_size=layout.pooled)
        return _result(call, call.compute(desc, x, rois, view=per_bin if layout.per_bin else None)[0])

    return Plan(call, ((out_sizes, call.dtype),), forward)


def _gradient(function, grad_output, input, boxes, output_size, spatial_scale, *, device):
    plan = _plan(function, input, boxes, output_size, spatial_scale, device=device)
    call = plan.call

    def compute():
        layout = _rois(call, boxes, output_size, spatial_scale)
        x, rois = _input_and_rois(call, layout)
        dy = call.host_of(grad_output)   # (K, C, h, w)
        if layout.per_bin:  # as the per-bin ROIs: (K * bins, C, 1, 1)
            dy = dy.reshape(dy.shape[:2] + (-1,)).transpose(0, 2, 1).reshape(-1, dy.shape[1], 1, 1)
        if x.data_type == DataType.FLOAT32 and call.dtype != np.float32:
            dy = as_float(dy).astype(np.float32)
        dy = call.upload_host(np.ascontiguousarray(dy))
        desc = RoiPoolingGradDesc(x.desc, rois.desc, dy.desc, spatial_scale=1.0, pooled_size=layout.pooled)
        return _result(call, call.compute(desc, x, rois, dy)[0])

    return gradient_plan(plan, compute)


def _torchvision_exported(form: str, _):
    """torchvision's ``form`` (``roi_pool``, ``roi_align``, ...), what ONNX exports record in
    place of poolgpu's (ONNX's MaxRoiPool, RoiAlign), imported when an export calls it."""
    def of_torchvision(*arguments):
        try:
            import torchvision.ops
        except ImportError as exc:
            raise ImportError(f"{form}: torch.onnx.export records torchvision.ops.{form} in its place: install "
                              f"torchvision (it did not import: {exc})") from exc
        return getattr(torchvision.ops, form)(*arguments)

    return of_torchvision


define_family("roi_pool", "Tensor input, Tensor boxes, int[] output_size, float spatial_scale, int? device_key", _plan,
              _gradient, _torchvision_exported, one_form=True)

"""torchvision's ``ps_roi_pool`` on poolgpu's ROI_ALIGN1, with autograd (deterministic
gathers).

torchvision's bins (float32, as its CPU kernel) are computed from the boxes on the host;
each bin then runs as an ROI of its own, one output bin whose samples land exactly on the
bin's elements (half-pixel corners ``[lo, hi)`` at scale 1, one sample per element, the
nearest element read): ROI align's average of those samples is the bin's sum over its area.
The position-sensitive channels come from strided views: the forward pools each image at
once, viewed as (bins, C / bins, H, W) with the bins outermost, the bin's index its ROI's
batch, so each bin reads only its own channels; the backward runs ROI align's gradient once
per image and bin over that bin's channels (C / bins, H, W), the image's boxes its ROIs in
order (a gather over every bin's ROIs at once would visit h * w times as many)."""

from __future__ import annotations

from typing import NamedTuple, Optional, Sequence, Union

import numpy as np

from ..arguments import number
from ..descs import RoiAlign1Desc, RoiAlignGradDesc
from ..device import Device
from ..dtypes import DataType
from ..errors import ValidationError
from ..functional._roi_align import roi_align_fields
from ..tensor import Tensor
from ..tensor_desc import TensorDesc
from ._arguments import checked, sizes_arg
from ._call import BFLOAT16_BITS, FLOATS, Call, Input, Output, Plan, Size, as_float, gradient_plan, of_type
from ._ops import define_family, dispatch
from .roi import _EXACT_INTEGERS, _boxes_arg, _host, _round_half_away, _torchvision_exported
from .roi_align import _ps_channels

__all__ = ["ps_roi_pool"]


def ps_roi_pool(input: Input, boxes: Union[Input, Sequence[Input]], output_size: Size, spatial_scale: float = 1.0, *,
                device: Optional[Device] = None) -> Output:
    """``torchvision.ops.ps_roi_pool`` on poolgpu: position-sensitive ROI pooling (R-FCN's),
    the **average** of each of ``output_size`` = (h, w) bins of each box, output channel
    ``c`` of bin (i, j) reading input channel ``(c * h + i) * w + j``.

    torchvision's arithmetic (its CPU kernel's, float32): corners ``round(c * spatial_scale)``
    (halves away from zero), region ``max(end - start, 1)`` (no + 1, unlike roi_pool), bin
    size ``region / output_size``, bin ``[floor(i * bin) + start, ceil((i + 1) * bin) + start)``
    clamped to [0, H - 1] and [0, W - 1] (torchvision's forward never reads the input's last
    row and column); the sum over the bin (rows, then columns, in float32) divided by its
    area; an empty bin gives 0.  Differentiable: the backward adds each bin's gradient divided
    by its area to the bin's elements, its bins clamped to [0, H] and [0, W] as torchvision's
    backward clamps them, in a deterministic gather (in box order).  float16 and bfloat16 are
    summed in float32 and rounded once.

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, H, W) with C a multiple of h * w; float32, float16 or bfloat16.
    boxes : tensor, or list of tensors
        A (K, 5) tensor of ``[batch, x1, y1, x2, y2]``, or a list of (L, 4) tensors
        ``[x1, y1, x2, y2]``, one per image.
    output_size : int or tuple of int
        (h, w), or one int for both.
    spatial_scale : float, default 1.0
        Scales the box corners to the input's coordinates.
    device : pg.Device, optional, keyword-only
        Where to run (see :func:`roi_pool`).

    Returns
    -------
    output
        (K, C / (h * w), h, w), of the input's kind and data type.

    Raises
    ------
    pg.ValidationError
        For boxes of a wrong shape or a batch index outside the input, a non-positive
        ``output_size``, a ``spatial_scale`` that is no finite number, channels that are no
        multiple of h * w, a ``device`` that is not a pg.Device, and a data type poolgpu lacks.
    """
    f = "ps_roi_pool"
    return dispatch(f, input, _boxes_arg(boxes, input), list(sizes_arg(output_size, 2, "output_size", f)),
                    float(checked(f, number, spatial_scale, "spatial_scale")), device=device)


class _Bins(NamedTuple):
    """torchvision's ps_roi_pool bins of every box: ``batch`` (K,), ``h`` (K, pooled_h, 2) and
    ``w`` (K, pooled_w, 2) [lo, hi) pairs."""

    batch: np.ndarray
    h: np.ndarray
    w: np.ndarray


def _axis_bins(start: np.ndarray, end: np.ndarray, pooled: int, top: int) -> np.ndarray:
    """(K, pooled, 2): float32 bin size and products, as torchvision's CPU kernel."""
    region = np.maximum(end - start, 1)
    size = region.astype(np.float32) / np.float32(pooled)
    i = np.arange(pooled, dtype=np.float32)
    lo = np.floor(i[None, :] * size[:, None]).astype(np.int64) + start[:, None]
    hi = np.ceil((i[None, :] + np.float32(1)) * size[:, None]).astype(np.int64) + start[:, None]
    return np.stack([np.clip(lo, 0, top), np.clip(hi, 0, top)], axis=-1)


def _bins(call: Call, boxes, output_size, spatial_scale, backward: bool) -> _Bins:
    """The bins of the forward (clamped to size - 1) or of the backward (to size)."""
    n, _, height, width = call.sizes
    rois = _host(boxes).astype(np.float32)
    with np.errstate(all="ignore"):
        batch = np.trunc(rois[:, 0].astype(np.float64))
        scaled = rois[:, 1:] * np.float32(spatial_scale)   # float32 products, as torchvision's
    if not ((batch >= 0) & (batch < n)).all():
        raise ValidationError("boxes", f"ps_roi_pool: a box's batch index is outside the input's {n} images")
    if not np.isfinite(scaled).all():
        raise ValidationError("boxes", "ps_roi_pool: a box's corner times spatial_scale is not finite")
    corners = np.clip(_round_half_away(scaled), -2**40, 2**40).astype(np.int64)
    grow = 0 if backward else -1
    return _Bins(batch.astype(np.int64), _axis_bins(corners[:, 1], corners[:, 3], output_size[0], height + grow),
                 _axis_bins(corners[:, 0], corners[:, 2], output_size[1], width + grow))


#: ROI align's arguments making each bin's ROI average its elements: one nearest sample per
#: element (adaptive sampling of a one-bin region of ``hi - lo`` elements), half-pixel corners.
_FIELDS = {k: v for k, v in roi_align_fields((1, 1), 1.0, 0, "avg", True).items() if k != "output_size"}
_FIELDS["interpolation_mode"] = "nearest_neighbor"


def _exact(call: Call) -> bool:
    """Whether the input's type holds every bin corner (0 to H, 0 to W) exactly."""
    return max(call.sizes[2:]) <= _EXACT_INTEGERS[call.dtype]


def _input(call: Call) -> Tensor:
    """The input, or a float32 copy where its type cannot hold every corner exactly."""
    if _exact(call):
        return call.tensor()
    return call.upload_host(as_float(call.host()).astype(np.float32))


def _image_view(x: Tensor, n: int, bins: int) -> Tensor:
    """Image n of x as (bins, C / bins, H, W): channel (c, b) at b, c (bins outermost)."""
    sn, sc, sh, sw = x.desc.strides
    channels, height, width = x.sizes[1:]
    desc = TensorDesc(x.data_type, (bins, channels // bins, height, width), (sc, bins * sc, sh, sw),
                      x.desc.total_size_in_bytes - n * sn * x.data_type.size)
    return x.device.wrap(x.buffer, desc, x.offset + n * sn * x.data_type.size)


def _corners(bins: _Bins, chosen: np.ndarray) -> np.ndarray:
    """(K, h, w, 4): the bins of boxes ``chosen`` as ROI corners [lo_w, lo_h, hi_w, hi_h]."""
    h, w = bins.h[chosen], bins.w[chosen]
    shape = (len(chosen), h.shape[1], w.shape[1])
    return np.stack([np.broadcast_to(w[:, None, :, 0], shape), np.broadcast_to(h[:, :, None, 0], shape),
                     np.broadcast_to(w[:, None, :, 1], shape), np.broadcast_to(h[:, :, None, 1], shape)], axis=-1)


def _rois(call: Call, corners: np.ndarray, batch: np.ndarray, dtype: DataType) -> tuple:
    """ROI_ALIGN1's rois ({1, 1, R, 4} of ``dtype``) and batch indices for host ``corners``
    (..., 4) and ``batch``."""
    corners = corners.reshape(1, 1, -1, 4).astype(np.float32)
    corners = of_type(corners, BFLOAT16_BITS) if dtype == DataType.BFLOAT16 else corners.astype(dtype.numpy)
    return (call.upload_host(np.ascontiguousarray(corners)),
            call.upload_host(np.ascontiguousarray(batch, np.uint32).reshape(1, 1, -1)))


def _host_result(call: Call, values: np.ndarray, x: Tensor) -> np.ndarray:
    """Host values of x's type in the input's."""
    if x.data_type == DataType.FLOAT32 and call.dtype != np.float32:
        return of_type(values, call.dtype)
    return values


def _plan(function, input, boxes, output_size, spatial_scale, *, device):
    call = Call(input, function, 2, FLOATS, device, ranks=(4,))
    call.require_nonzero()
    pooled_h, pooled_w = output_size
    channels = _ps_channels(call, output_size, function)
    count = boxes.shape[0]

    def forward():
        bins = _bins(call, boxes, output_size, spatial_scale, backward=False)
        x = _input(call)
        out = None
        for n in np.unique(bins.batch):   # one ROI align per image: its (bins, C / bins, H, W) view
            chosen = np.flatnonzero(bins.batch == n)
            view = _image_view(x, int(n), pooled_h * pooled_w)
            # each bin (box, i, j) an ROI, its batch the bin's index in the view
            rois, batch = _rois(call, _corners(bins, chosen), np.tile(np.arange(pooled_h * pooled_w), len(chosen)),
                                x.data_type)
            y = call.device.compile(RoiAlign1Desc(view.desc, rois.desc, batch.desc, output_size=(1, 1), **_FIELDS))(
                view, rois, batch)
            values = call.host_of(y).reshape(len(chosen), pooled_h, pooled_w, channels)
            if out is None:
                out = np.zeros((count, channels, pooled_h, pooled_w), values.dtype)
            out[chosen] = values.transpose(0, 3, 1, 2)
        return (_host_result(call, out, x),)

    return Plan(call, (((count, channels, pooled_h, pooled_w), call.dtype),), forward)


def _gradient(function, grad_output, input, boxes, output_size, spatial_scale, *, device):
    plan = _plan(function, input, boxes, output_size, spatial_scale, device=device)
    call = plan.call
    pooled_h, pooled_w = output_size
    bins_count = pooled_h * pooled_w

    def compute():
        bins = _bins(call, boxes, output_size, spatial_scale, backward=True)
        dy = call.host_of(grad_output)   # (K, C / bins, h, w)
        float32 = not _exact(call)
        if float32:
            dy = as_float(dy).astype(np.float32)
        data_type = DataType.BFLOAT16 if dy.dtype == BFLOAT16_BITS else DataType.of(dy.dtype, "grad_output")
        n_images, c, height, width = call.sizes
        dx = np.zeros((n_images, c, height, width), dy.dtype)
        # One gradient per image and bin (i, j), over the channels (C / bins, H, W) of that
        # bin: each of the image's boxes an ROI, in order.  (One per image over all its bins
        # would hold h * w times the ROIs, each element's gather visiting all of them.)
        shape = (1, c // bins_count, height, width)
        for n in np.unique(bins.batch):
            chosen = np.flatnonzero(bins.batch == n)
            corners = _corners(bins, chosen)
            for i in range(pooled_h):
                for j in range(pooled_w):
                    rois, batch = _rois(call, corners[:, i, j], np.zeros(len(chosen)), data_type)
                    grad = call.upload_host(np.ascontiguousarray(dy[chosen, :, i, j, None, None]))
                    desc = RoiAlignGradDesc(None, grad.desc, rois.desc, batch.desc, input_sizes=shape, **_FIELDS)
                    dx[n, i * pooled_w + j::bins_count] = call.host_of(call.device.compile(desc)(grad, rois, batch))[0]
        return (of_type(dx, call.dtype) if float32 and call.dtype != np.float32 else dx,)

    return gradient_plan(plan, compute)


define_family("ps_roi_pool", "Tensor input, Tensor boxes, int[] output_size, float spatial_scale, int? device_key",
              _plan, _gradient, _torchvision_exported, one_form=True)

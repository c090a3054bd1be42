"""torchvision's ``roi_align`` and ``ps_roi_align`` on poolgpu's ROI_ALIGN1, with autograd
(deterministic gathers)."""

from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np
import torch

from ..arguments import integer, number
from ..descs import RoiAlign1Desc, RoiAlignGradDesc
from ..device import Device
from ..dtypes import DataType
from ..errors import ValidationError
from ..functional._roi_align import roi_align_fields
from ..tensor import Tensor
from ..tensor_desc import TensorDesc
from ._arguments import boolean, checked, sizes_arg
from ._call import BFLOAT16_BITS, FLOATS, Call, Input, Output, Plan, Size, gradient_plan, of_type
from ._ops import define_family, dispatch
from .roi import _boxes_arg, _host, _torchvision_exported

__all__ = ["roi_align", "ps_roi_align"]


def _arguments(f: str, boxes, input, output_size, spatial_scale, sampling_ratio) -> tuple:
    return (_boxes_arg(boxes, input), list(sizes_arg(output_size, 2, "output_size", f)),
            float(checked(f, number, spatial_scale, "spatial_scale")),
            checked(f, integer, sampling_ratio, "sampling_ratio", minimum=-(2**31), maximum=2**31 - 1))


def roi_align(input: Input, boxes: Union[Input, Sequence[Input]], output_size: Size, spatial_scale: float = 1.0,
              sampling_ratio: int = -1, aligned: bool = False, *, device: Optional[Device] = None) -> Output:
    """``torchvision.ops.roi_align`` on poolgpu: each of ``output_size`` = (h, w) bins of each
    box, sampled bilinearly and averaged.

    torchvision's arithmetic (its CPU kernel's, float32): corners times ``spatial_scale``,
    less half a pixel where ``aligned``; without ``aligned`` regions of at least one element;
    ``sampling_ratio`` samples per bin and axis, or where it is <= 0 ``ceil(region / size)``;
    a sample outside [-1, size] reads 0, the others clamp to the input.  Differentiable: the
    backward is a deterministic gather (torchvision's CUDA backward adds with atomics).

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, H, W); float32, float16 or bfloat16.
    boxes : tensor, or list of tensors
        A (K, 5) tensor of ``[batch, x1, y1, x2, y2]``, or a list of (L, 4) tensors
        ``[x1, y1, x2, y2]``, one per image.
    output_size : int or tuple of int
        (h, w), or one int for both.
    spatial_scale : float, default 1.0
        Scales the box corners to the input's coordinates.
    sampling_ratio : int, default -1
        Samples per bin along each axis; <= 0: adaptive.
    aligned : bool, default False
        Shift the scaled corners by half a pixel (pixel centres at half pixels).
    device : pg.Device, optional, keyword-only
        Where to run (see :func:`roi_pool`).

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
    f = "roi_align"
    return dispatch(f, input, *_arguments(f, boxes, input, output_size, spatial_scale, sampling_ratio),
                    boolean(aligned, "aligned", f), device=device)


def ps_roi_align(input: Input, boxes: Union[Input, Sequence[Input]], output_size: Size, spatial_scale: float = 1.0,
                 sampling_ratio: int = -1, *, device: Optional[Device] = None) -> Output:
    """``torchvision.ops.ps_roi_align`` on poolgpu: position-sensitive ROI align (R-FCN's).
    Output channel ``c`` of bin (i, j) samples input channel ``(c * h + i) * w + j``, as
    :func:`roi_align` with ``aligned=True`` samples (torchvision's ps_roi_align shifts by
    half a pixel and keeps regions as they are).  Differentiable, deterministically.

    Parameters
    ----------
    input : torch.Tensor, numpy.ndarray or pg.Tensor
        (N, C, H, W) with C a multiple of h * w; float32, float16 or bfloat16.
    boxes, output_size, spatial_scale, sampling_ratio, device
        As for :func:`roi_align`.

    Returns
    -------
    output
        (K, C / (h * w), h, w), of the input's kind and data type.

    Raises
    ------
    pg.ValidationError
        As :func:`roi_align`, and for channels that are no multiple of h * w.
    """
    f = "ps_roi_align"
    return dispatch(f, input, *_arguments(f, boxes, input, output_size, spatial_scale, sampling_ratio), device=device)


class _Rois:
    """A call's boxes as ROI_ALIGN1's tensors: {1, 1, K, 4} corners of the input's type and
    {1, 1, K} UINT32 images (checked to lie in the input)."""

    def __init__(self, call: Call, boxes, function: str):
        self.call, self.boxes, self.function = call, boxes, function

    def tensors(self) -> tuple:
        call = self.call
        rois = _host(self.boxes).astype(np.float32)
        with np.errstate(invalid="ignore"):
            batch = np.trunc(rois[:, 0].astype(np.float64))   # as torchvision's int cast
        if not ((batch >= 0) & (batch < call.sizes[0])).all():
            raise ValidationError("boxes", f"{self.function}: a box's batch index is outside the input's "
                                           f"{call.sizes[0]} images")
        corners = rois[:, 1:].reshape(1, 1, -1, 4)
        corners = of_type(corners, BFLOAT16_BITS) if call.dtype == BFLOAT16_BITS else corners.astype(call.dtype)
        return call.upload_host(np.ascontiguousarray(corners)), call.upload_host(batch.astype(np.uint32).reshape(1, 1, -1))


def _fields(output_size, spatial_scale, sampling_ratio, aligned) -> dict:
    return roi_align_fields(tuple(output_size), spatial_scale, sampling_ratio, "avg", aligned)


def _plan(function, input, boxes, output_size, spatial_scale, sampling_ratio, aligned, *, device):
    call = Call(input, function, 2, FLOATS, device, ranks=(4,))
    call.require_nonzero()
    fields = _fields(output_size, spatial_scale, sampling_ratio, aligned)
    out_sizes = (boxes.shape[0], call.sizes[1]) + tuple(output_size)

    def forward():
        x = call.tensor()
        rois, batch = _Rois(call, boxes, function).tensors()
        return call.compute(RoiAlign1Desc(x.desc, rois.desc, batch.desc, **fields), x, rois, batch)

    return Plan(call, ((out_sizes, call.dtype),), forward)


def _input_gradient(call: Call, boxes, function: str, dy: np.ndarray, fields: dict) -> tuple:
    """dx of ROI align's ``fields`` for a host dy (K, C, h, w)."""
    if dy.shape[0] == 0:   # no boxes (e.g. none at an FPN level): no gradient
        return (np.zeros(call.sizes, call.dtype),)
    rois, batch = _Rois(call, boxes, function).tensors()
    dyt = call.upload_host(np.ascontiguousarray(dy))
    fields = {k: v for k, v in fields.items() if k != "output_size"}
    desc = RoiAlignGradDesc(None, dyt.desc, rois.desc, batch.desc, input_sizes=call.sizes, **fields)
    return call.compute(desc, dyt, rois, batch)


def _gradient(function, grad_output, input, boxes, output_size, spatial_scale, sampling_ratio, aligned, *, device):
    plan = _plan(function, input, boxes, output_size, spatial_scale, sampling_ratio, aligned, device=device)
    call = plan.call
    fields = _fields(output_size, spatial_scale, sampling_ratio, aligned)
    return gradient_plan(plan, lambda: _input_gradient(call, boxes, function, call.host_of(grad_output), fields))


define_family("roi_align", "Tensor input, Tensor boxes, int[] output_size, float spatial_scale, int sampling_ratio, "
              "bool aligned, int? device_key", _plan, _gradient, _torchvision_exported, one_form=True)


def _ps_channels(call: Call, output_size, function: str) -> int:
    bins = output_size[0] * output_size[1]
    if call.sizes[1] % bins:
        raise ValidationError("input", f"{function}: the input's channels ({call.sizes[1]}) must be a multiple of "
                                       f"output height * width ({bins})")
    return call.sizes[1] // bins


def _ps_plan(function, input, boxes, output_size, spatial_scale, sampling_ratio, *, device):
    call = Call(input, function, 2, FLOATS, device, ranks=(4,))
    call.require_nonzero()
    h, w = output_size
    channels = _ps_channels(call, output_size, function)
    fields = _fields(output_size, spatial_scale, sampling_ratio, True)
    count = boxes.shape[0]

    def forward():
        # ROI align of every channel at every bin, then the position-sensitive diagonal as a
        # strided view: out[k, c, i, j] = all[k, (c * h + i) * w + j, i, j]
        x = call.tensor()
        rois, batch = _Rois(call, boxes, function).tensors()
        bins = h * w

        def diagonal(y: Tensor) -> Tensor:
            view = TensorDesc(y.data_type, (count, channels, h, w),
                              (call.sizes[1] * bins, bins * bins, w * bins + w, bins + 1), y.desc.total_size_in_bytes)
            return call.device.wrap(y.buffer, view, y.offset)

        return call.compute(RoiAlign1Desc(x.desc, rois.desc, batch.desc, **fields), x, rois, batch, view=diagonal)

    return Plan(call, (((count, channels, h, w), call.dtype),), forward)


def _ps_gradient(function, grad_output, input, boxes, output_size, spatial_scale, sampling_ratio, *, device):
    plan = _ps_plan(function, input, boxes, output_size, spatial_scale, sampling_ratio, device=device)
    call = plan.call
    h, w = output_size
    fields = _fields(output_size, spatial_scale, sampling_ratio, True)

    def compute():
        dy = call.host_of(grad_output)   # (K, C / bins, h, w) onto the diagonal of (K, C, h, w)
        full = np.zeros((dy.shape[0], call.sizes[1], h, w), dy.dtype)
        i, j = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
        for c in range(dy.shape[1]):
            full[:, (c * h + i) * w + j, i, j] = dy[:, c, i, j]
        return _input_gradient(call, boxes, function, full, fields)

    return gradient_plan(plan, compute)


define_family("ps_roi_align", "Tensor input, Tensor boxes, int[] output_size, float spatial_scale, "
              "int sampling_ratio, int? device_key", _ps_plan, _ps_gradient, _torchvision_exported,
              one_form=True)

"""ROI align in the functional API, with ONNX RoiAlign-16's arguments: ``pg.roi_align`` and its
gradient ``pg.roi_align_grad``."""

from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np

from ..arguments import U32_MAX, array, choice, flag, integer, integers, is_integer
from ..descs import RoiAlign1Desc, RoiAlignGradDesc, made
from ..descs.roi_align import ROI_BATCH_TYPES, f32_number
from ..device import Device
from ..dtypes import DataType
from ..errors import ValidationError
from ..tensor import Tensor
from ._common import ArrayLike, Result, _run

__all__ = ["roi_align", "roi_align_grad", "roi_align_fields", "roi_align_inputs"]


def roi_align_fields(output_size, spatial_scale, sampling_ratio, mode: str, aligned, weighted: bool = False) -> dict:
    """RoiAlign1Desc's fields for ONNX RoiAlign-16's (and torchvision's) arguments: ``aligned``
    is half_pixel (pixel centres at half pixels), else output_half_pixel (no offset, regions
    at least one element); ``sampling_ratio <= 0`` adaptive (ceil(region / output) samples,
    none for an empty region)."""
    size = (output_size, output_size) if is_integer(output_size) else output_size
    size = integers(size, "output_size", 2, minimum=1)
    ratio = integer(sampling_ratio, "sampling_ratio", minimum=-(2**31), maximum=U32_MAX)
    aligned = flag(aligned, "aligned")
    scale = f32_number(spatial_scale, "spatial_scale")
    return dict(output_size=size, spatial_scale_x=scale, spatial_scale_y=scale,
                reduction_function={"avg": "average", "max": "max"}[choice(mode, "mode", ("avg", "max"))],
                input_pixel_offset=0.5 if aligned else 0.0, output_pixel_offset=-0.5,
                minimum_samples_per_output=max(ratio, 0), maximum_samples_per_output=ratio if ratio > 0 else U32_MAX,
                minimum_region_size=None if aligned else 1.0, weighted_corner_max=weighted)


def roi_align_inputs(x, rois, batch_indices) -> tuple:
    """(x, rois, batch_indices) as RoiAlign1Desc takes them: host ``rois`` (R, 4) as
    {1, 1, R, 4} of ``x``'s type, host ``batch_indices`` (R,) as {1, 1, R} of UINT32 (after
    checking that each lies in [0, N)); Tensors as they are."""
    if not isinstance(x, Tensor):
        x = array(x, "x")
    data_type = x.data_type if isinstance(x, Tensor) else DataType.of(x.dtype, "x")
    if not isinstance(rois, Tensor):
        rois = array(rois, "rois", ranks=None, typed=False, empty=True)
        if (rois.dtype.kind not in "fiu" and rois.dtype.name != "bfloat16") or rois.ndim < 1 or rois.shape[-1] != 4 or \
                any(s != 1 for s in rois.shape[:-2]):
            raise ValidationError("rois", f"expected an (R, 4) array of [x1, y1, x2, y2], got {rois.dtype} {rois.shape}")
        rois = rois.reshape(1, 1, -1, 4)
        if data_type.is_float:
            with np.errstate(over="ignore", invalid="ignore"):
                rois = rois.astype(data_type.numpy)
    if not isinstance(batch_indices, Tensor):
        b = array(batch_indices, "batch_indices", ranks=None, typed=False, empty=True)
        if b.dtype.kind not in "iu":
            raise ValidationError("batch_indices", f"expected integers, got {b.dtype}")
        b = b.reshape(-1)
        count = rois.sizes[-2] if isinstance(rois, Tensor) else rois.shape[2]
        images = x.sizes[0] if isinstance(x, Tensor) else (x.shape[0] if x.ndim == 4 else None)
        if len(b) != count:
            raise ValidationError("batch_indices", f"expected one per ROI ({count}), got {len(b)}")
        if images is not None and len(b) and (b.min() < 0 or b.max() >= images):
            raise ValidationError("batch_indices", f"every index must lie in [0, {images}) (the input's images), "
                                                   f"got {b.min()} to {b.max()}")
        batch_indices = b.astype(np.uint32).reshape(1, 1, -1)
    elif batch_indices.data_type not in ROI_BATCH_TYPES:
        raise ValidationError("batch_indices", f"expected UINT32, INT32, UINT64 or INT64, got "
                                               f"{batch_indices.data_type.name}")
    return x, rois, batch_indices


def roi_align(x: ArrayLike, rois: ArrayLike, batch_indices: ArrayLike, output_size: Union[int, Sequence[int]],
              spatial_scale: float = 1.0, sampling_ratio: int = 0, mode: str = "avg", aligned: bool = True,
              device: Optional[Device] = None) -> Result:
    """ROI align with ONNX RoiAlign-16's conventions (DirectML's ROI_ALIGN1 underneath).

    Each output (r, c, i, j) samples bin (i, j) of ROI r's region of image
    ``batch_indices[r]``, bilinearly, and averages (``"avg"``) or takes the maximum of the
    interpolated samples (``"max"``; ONNX Runtime's max of the weighted corners is
    :func:`poolgpu.onnx.roi_align`'s).  docs/semantics.md tabulates the conventions.

    Parameters
    ----------
    x : ndarray, Tensor or array-like
        {N, C, H, W}: float32, float16 or bfloat16.
    rois : ndarray, Tensor or array-like
        (R, 4) ``[x1, y1, x2, y2]`` in input coordinates before ``spatial_scale``
        (converted to x's type), or a {1, R, 4} / {1, 1, R, 4} Tensor of x's type.
    batch_indices : ndarray, Tensor or array-like
        (R,) integers in [0, N); or a {1, 1, R} / {1, 1, 1, R} Tensor of UINT32, INT32,
        UINT64 or INT64 (an index outside [0, N) then gives zeros).
    output_size : int or (int, int)
        (height, width) of each ROI's output.
    spatial_scale : float, default 1.0
        Multiplies the ROI corners (in float32).
    sampling_ratio : int, default 0
        Samples per bin along each axis; <= 0: adaptive, ``ceil(region / output_size)``
        (none for an empty region: zeros).
    mode : str, default "avg"
        "avg" or "max".
    aligned : bool, default True
        True: ONNX's half_pixel, torchvision's ``aligned=True`` (the scaled corners less
        half a pixel); False: ONNX opset 10's and output_half_pixel's, torchvision's
        default (no shift; regions of at least one element).
    device : Device, optional
        Where to run (see :func:`max_pool`).

    Returns
    -------
    ndarray or Tensor
        {R, C, height, width} of x's kind and type.

    Raises
    ------
    ValidationError
        For a bad shape or type, a batch index outside the input, a non-positive
        ``output_size``, a ``spatial_scale`` not finite in float32, an unknown ``mode``.
    """
    fields = roi_align_fields(output_size, spatial_scale, sampling_ratio, mode, aligned)
    x, rois, batch_indices = roi_align_inputs(x, rois, batch_indices)

    def describe(input, roi, batch):
        return made(RoiAlign1Desc, input, roi, batch, **fields)

    return _run(describe, (x, rois, batch_indices), device, names=("x", "rois", "batch_indices"))


def roi_align_grad(x: ArrayLike, rois: ArrayLike, batch_indices: ArrayLike, dy: ArrayLike,
                   output_size: Union[int, Sequence[int]], spatial_scale: float = 1.0, sampling_ratio: int = 0,
                   mode: str = "avg", aligned: bool = True, device: Optional[Device] = None) -> Result:
    """The gradient of :func:`roi_align` with respect to ``x``: each output's ``dy`` spread
    over the elements its samples read, with their bilinear weights (``"avg"``: divided by
    the samples; ``"max"``: the first largest sample's).  A deterministic gather: the same
    bits run after run.

    Parameters
    ----------
    x : ndarray, Tensor or array-like
        The forward input {N, C, H, W}.
    rois, batch_indices, output_size, spatial_scale, sampling_ratio, mode, aligned
        The forward pass's (see :func:`roi_align`).
    dy : ndarray, Tensor or array-like
        The gradient of the forward output, {R, C, height, width} of x's type.
    device : Device, optional
        Where to run (see :func:`max_pool`).

    Returns
    -------
    ndarray or Tensor
        dx, of x's sizes, kind and type.

    Raises
    ------
    ValidationError
        As :func:`roi_align`, and for a ``dy`` of other sizes or type.
    """
    fields = roi_align_fields(output_size, spatial_scale, sampling_ratio, mode, aligned)
    del fields["output_size"]
    x, rois, batch_indices = roi_align_inputs(x, rois, batch_indices)

    def describe(input, gradient, roi, batch):
        return made(RoiAlignGradDesc, input, gradient, roi, batch, **fields)

    return _run(describe, (x, dy, rois, batch_indices), device, names=("x", "dy", "rois", "batch_indices"))

"""ONNX RoiAlign (opsets 10, 16 and 22) on poolgpu's ROI_ALIGN1, as ONNX Runtime's CPU provider
computes it."""

from __future__ import annotations

from typing import Optional, Union

from ..arguments import choice, integer, number
from ..descs import RoiAlign1Desc
from ..device import Device
from ..functional import ArrayLike, Result
from ..functional._common import _run
from ..functional._roi_align import roi_align_fields, roi_align_inputs
from ._operators import _text

__all__ = ["roi_align"]


def roi_align(x: ArrayLike, rois: ArrayLike, batch_indices: ArrayLike, mode: Union[str, bytes] = "avg",
              output_height: int = 1, output_width: int = 1, sampling_ratio: int = 0, spatial_scale: float = 1.0,
              coordinate_transformation_mode: Union[str, bytes] = "half_pixel",
              device: Optional[Device] = None) -> Result:
    """ONNX RoiAlign: ``x`` (N, C, H, W), ``rois`` (num_rois, 4) of ``[x1, y1, x2, y2]``,
    ``batch_indices`` (num_rois,) -> Y (num_rois, C, output_height, output_width), as ONNX
    Runtime's CPU provider gives it.

    ``"half_pixel"`` (opset 16's default) shifts the scaled corners by half a pixel and takes
    regions as they are (an empty or inverted one gets no adaptive samples: zeros);
    ``"output_half_pixel"`` (opset 10's only behaviour: :func:`run_node` passes it for
    RoiAlign-10 nodes) does not shift and makes regions at least one element.
    ``sampling_ratio`` 0 samples adaptively (``ceil(region / output)`` per axis).  ``"max"``
    is ONNX Runtime's default max: per sample the largest of the four corners each times its
    bilinear weight (ONNX's reference computes the same); poolgpu.roi_align's ``"max"`` is
    the maximum of the interpolated samples (docs/semantics.md, "ROI align").

    Parameters
    ----------
    x : array_like or Tensor
        X, (N, C, H, W): float32, float16 or bfloat16.
    rois : array_like or Tensor
        (num_rois, 4), converted to x's type (a {1, 1, R, 4} Tensor of it).
    batch_indices : array_like or Tensor
        (num_rois,) integers in [0, N) (a {1, 1, R} Tensor: an index outside gives zeros).
    mode : str or bytes, default "avg"
        "avg" or "max".
    output_height, output_width : int, default 1
        Positive.
    sampling_ratio : int, default 0
        Samples per bin along each axis, >= 0 (0: adaptive).
    spatial_scale : float, default 1.0
        Finite in float32.
    coordinate_transformation_mode : str or bytes, default "half_pixel"
        "half_pixel" or "output_half_pixel".
    device : Device, optional
        As for :func:`max_pool`.

    Returns
    -------
    Y
        A NumPy array for array input, a Tensor for a Tensor.

    Raises
    ------
    ValidationError
        Before any GPU work, naming the attribute or input.
    """
    mode = choice(_text(mode), "mode", ("avg", "max"))
    transform = choice(_text(coordinate_transformation_mode), "coordinate_transformation_mode",
                       ("half_pixel", "output_half_pixel"))
    size = (integer(output_height, "output_height", minimum=1), integer(output_width, "output_width", minimum=1))
    ratio = integer(sampling_ratio, "sampling_ratio", minimum=0, maximum=2**31 - 1)
    fields = roi_align_fields(size, number(spatial_scale, "spatial_scale"), ratio, mode,
                              transform == "half_pixel", weighted=True)
    x, rois, batch_indices = roi_align_inputs(x, rois, batch_indices)

    def describe(input, roi, batch):
        return RoiAlign1Desc(input, roi, batch, **fields)

    return _run(describe, (x, rois, batch_indices), device, names=("X", "rois", "batch_indices"))

"""ONNX operators, run with ONNX's attribute names, defaults and rules, on top of poolgpu's
DirectML-style operators: NumPy arrays in, NumPy arrays out; Tensors in, Tensors out.

Each function is named after its ONNX operator (``MaxRoiPool`` -> :func:`max_roi_pool`) and
takes the operator's inputs, then its attributes as keyword arguments, then ``device``.
"""

from __future__ import annotations

from .descs import _positive_sizes
from .functional import roi_pool

__all__ = ["max_roi_pool"]


def max_roi_pool(x, rois, pooled_shape, spatial_scale=1.0, device=None):
    """ONNX MaxRoiPool: ``x`` (N, C, H, W), ``rois`` (num_rois, 5) of
    ``[batch_id, x1, y1, x2, y2]`` -> Y (num_rois, C, pooled_shape[0], pooled_shape[1]).

    ONNX leaves the bin arithmetic to implementations; this is DirectML's ROI_POOLING (which
    implements MaxRoiPool), as :func:`poolgpu.roi_pool` documents."""
    pooled_shape = _positive_sizes(pooled_shape, "pooled_shape", 2)
    return roi_pool(x, rois, pooled_size=pooled_shape, spatial_scale=spatial_scale, device=device)

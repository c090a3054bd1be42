"""ONNX's pooling operators with ONNX's attributes and rules, on poolgpu's operators.

Each function takes the ONNX operator's inputs and attributes (keyword names as in the ONNX
specification) and returns what the operator returns: NumPy arrays for NumPy inputs,
Tensors for Tensors.  What ONNX adds to DirectML's descriptions is translated here:

- ``pads`` in ONNX order (all begins, then all ends) and ``auto_pad`` (NOTSET, VALID,
  SAME_UPPER, SAME_LOWER: output ``ceil(in / stride)``, the odd padding element at the
  end for SAME_UPPER and at the beginning for SAME_LOWER);
- ``ceil_mode``: the output size is rounded up, but a last window that would start in the
  end padding is dropped; the extra end padding this needs is padding like any other for
  max and Lp pooling, and is left out of AveragePool's ``count_include_pad`` divisor (as
  ONNX's reference and PyTorch do);
- ``storage_order = 1``: column-major indices, computed by pooling a spatially transposed
  view of the same memory (no copy);
- indices as int64;
- MaxUnpool's ``output_shape``: the output's shape, in which the indices are flat
  positions, as ONNX Runtime and PyTorch read them (MaxPool's indices of an odd-sized input
  unpool back to where they came from).  ONNX's reference evaluator, and its node test
  ``test_maxunpool_export_with_output_shape``, instead unpool into the inferred shape and
  pad the result at the ends, which moves values of odd-sized inputs and drops some
  (onnx/onnx#2398, microsoft/onnxruntime#2193): the one ONNX node test poolgpu answers
  differently, on purpose.

Every function also takes ``device=`` (default: the inputs' device, or the default device
for NumPy inputs).
"""

from __future__ import annotations

import math
from .descs import AveragePooling1Desc, LpPooling1Desc, MaxPooling2Desc, MaxUnpoolingDesc, _positive_sizes
from .device import Tensor
from .dtypes import DataType
from .errors import ValidationError
from .functional import _unsigned_indices, answer, on_device, roi_pool
from .tensor_desc import TensorDesc, _int_tuple

_AUTO_PADS = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")


def _geometry(spatial, kernel_shape, auto_pad="NOTSET", ceil_mode=0, dilations=None, pads=None, strides=None):
    """DirectML window fields for an ONNX pooling node over ``spatial`` input sizes, plus
    the end padding ONNX declared (before ceil_mode's extension)."""
    dims = len(spatial)
    kernel = tuple(int(k) for k in kernel_shape)
    if len(kernel) != dims:
        raise ValidationError("kernel_shape", f"expected {dims} values for an input with {dims} spatial dimensions, got {kernel}")
    strides = tuple(int(s) for s in strides) if strides is not None else (1,) * dims
    dilations = tuple(int(d) for d in dilations) if dilations is not None else (1,) * dims
    if auto_pad not in _AUTO_PADS:
        raise ValidationError("auto_pad", f"expected one of {', '.join(_AUTO_PADS)}, got {auto_pad!r}")
    if len(strides) != dims or len(dilations) != dims:
        raise ValidationError("strides" if len(strides) != dims else "dilations", f"expected {dims} values")
    extents = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for size, ext, s in zip(spatial, extents, strides):
            total = max(0, (math.ceil(size / s) - 1) * s + ext - size)
            small, large = total // 2, total - total // 2
            begin.append(small if auto_pad == "SAME_UPPER" else large)
            end.append(large if auto_pad == "SAME_UPPER" else small)
    elif auto_pad == "VALID" or pads is None:
        begin, end = [0] * dims, [0] * dims
    else:
        pads = [int(p) for p in pads]
        if len(pads) != 2 * dims:
            raise ValidationError("pads", f"expected {2 * dims} values (begins then ends), got {pads}")
        begin, end = pads[:dims], pads[dims:]
    end_padding = list(end)
    if ceil_mode:
        for i, (size, ext, s) in enumerate(zip(spatial, extents, strides)):
            padded = size + begin[i] + end[i]
            out = -(-(padded - ext) // s) + 1  # ceil((padded - ext) / s) + 1
            if (out - 1) * s >= size + begin[i]:  # the last window would start in the end padding
                out -= 1
            end_padding[i] += max(0, (out - 1) * s + ext - padded)
    window = dict(window_size=kernel, strides=strides, dilations=dilations,
                  start_padding=tuple(begin), end_padding=tuple(end_padding))
    return window, tuple(end)


def _transposed(desc: TensorDesc) -> TensorDesc:
    """The same memory with the spatial dimensions in reverse order."""
    return TensorDesc(desc.data_type, desc.sizes[:2] + desc.sizes[:1:-1], desc.strides[:2] + desc.strides[:1:-1],
                      desc.total_size_in_bytes)


def _reverse_spatial(window: dict) -> dict:
    return {k: tuple(reversed(v)) for k, v in window.items()}


def max_pool(x, kernel_shape, auto_pad="NOTSET", ceil_mode=0, dilations=None, pads=None, storage_order=0,
             strides=None, return_indices=False, device=None):
    """ONNX MaxPool: Y, or (Y, Indices) with int64 indices when ``return_indices``."""
    (x,), device, as_numpy = on_device((x,), device)
    window, _ = _geometry(x.sizes[2:], kernel_shape, auto_pad, ceil_mode, dilations, pads, strides)
    if storage_order not in (0, 1):
        raise ValidationError("storage_order", f"expected 0 (row-major) or 1 (column-major), got {storage_order!r}")
    if not return_indices:
        return answer(device.compile(MaxPooling2Desc(x.desc, **window))(x), as_numpy)
    plain = MaxPooling2Desc(x.desc, output_indices=DataType.UINT64, **window)
    y, indices = device.empty(plain.output), device.empty(plain.output_indices)
    if storage_order == 1:
        # Flat indices of the transposed view are the column-major indices of the input.
        views = [device.wrap(t.buffer, _transposed(t.desc), t.offset) for t in (x, y, indices)]
        desc = MaxPooling2Desc(views[0].desc, views[1].desc, views[2].desc, **_reverse_spatial(window))
        device.compile(desc)(views[0], out=tuple(views[1:]))
    else:
        device.compile(plain)(x, out=(y, indices))
    int64 = device.wrap(indices.buffer, TensorDesc(DataType.INT64, indices.sizes), indices.offset)
    return answer((y, int64), as_numpy)


def average_pool(x, kernel_shape, auto_pad="NOTSET", ceil_mode=0, count_include_pad=0, dilations=None, pads=None,
                 strides=None, device=None):
    """ONNX AveragePool."""
    (x,), device, as_numpy = on_device((x,), device)
    window, declared_end = _geometry(x.sizes[2:], kernel_shape, auto_pad, ceil_mode, dilations, pads, strides)
    # the include-padding divisor counts the declared end padding, not ceil_mode's extension
    desc = AveragePooling1Desc(x.desc, include_padding=bool(count_include_pad), counted_end_padding=declared_end,
                               **window)
    return answer(device.compile(desc)(x), as_numpy)


def lp_pool(x, kernel_shape, auto_pad="NOTSET", ceil_mode=0, dilations=None, pads=None, p=2, strides=None,
            device=None):
    """ONNX LpPool (padding contributes nothing to the sum)."""
    (x,), device, as_numpy = on_device((x,), device)
    window, _ = _geometry(x.sizes[2:], kernel_shape, auto_pad, ceil_mode, dilations, pads, strides)
    return answer(device.compile(LpPooling1Desc(x.desc, p=p, **window))(x), as_numpy)


def _global_window(x) -> tuple:
    sizes = x.sizes if isinstance(x, Tensor) else x.shape
    return tuple(sizes[2:])


def global_max_pool(x, device=None):
    """ONNX GlobalMaxPool: the max over all spatial dimensions, kept as size 1."""
    return max_pool(x, _global_window(x), device=device)


def global_average_pool(x, device=None):
    """ONNX GlobalAveragePool."""
    return average_pool(x, _global_window(x), device=device)


def global_lp_pool(x, p=2, device=None):
    """ONNX GlobalLpPool."""
    return lp_pool(x, _global_window(x), p=p, device=device)


def max_unpool(x, indices, kernel_shape, pads=None, strides=None, output_shape=None, device=None):
    """ONNX MaxUnpool: ``x`` scattered to its (int64) ``indices`` in zeros.

    Without ``output_shape`` the output has the inferred shape, MaxPool's input shape
    ``(in - 1) * stride - pads_begin - pads_end + kernel`` per spatial dimension.  With
    ``output_shape`` (the full shape, N and C as ``x``'s) the output has that shape and the
    indices are flat positions in it, as ONNX Runtime and PyTorch read them: unpooling
    MaxPool's results with ``output_shape=x.shape`` puts every maximum back where it came
    from, whatever ``x``'s sizes.  Where indices repeat the largest j wins; indices outside
    the output are ignored (ONNX leaves both open)."""
    (x, indices), device, as_numpy = on_device((x, _unsigned_indices(indices)), device, names=("X", "I"))
    window, _ = _geometry(x.sizes[2:], kernel_shape, pads=pads, strides=strides)
    if output_shape is None:
        shape = x.sizes[:2] + tuple(
            (size - 1) * s - begin - end + k
            for size, s, begin, end, k in zip(x.sizes[2:], window["strides"], window["start_padding"],
                                              window["end_padding"], window["window_size"])
        )
    else:
        shape = _int_tuple(output_shape, "output_shape")
        if len(shape) != len(x.sizes) or shape[:2] != x.sizes[:2]:
            raise ValidationError("output_shape", f"expected {len(x.sizes)} sizes starting with X's N and C "
                                                  f"{x.sizes[:2]}, got {shape}")
    if any(size < 1 for size in shape):
        raise ValidationError("output_shape" if output_shape is not None else "kernel_shape",
                              f"the output shape {shape} has a size below 1")
    desc = MaxUnpoolingDesc(x.desc, indices.desc, TensorDesc(x.data_type, shape))
    return answer(device.compile(desc)(x, indices), as_numpy)


def max_roi_pool(x, rois, pooled_shape, spatial_scale=1.0, device=None):
    """ONNX MaxRoiPool: ``x`` (N, C, H, W), ``rois`` (num_rois, 5) of
    ``[batch_id, x1, y1, x2, y2]`` -> Y (num_rois, C, pooled_shape[0], pooled_shape[1]).

    ONNX leaves the bin arithmetic to implementations; this is DirectML's ROI_POOLING (which
    implements MaxRoiPool), as :func:`poolgpu.roi_pool` documents."""
    pooled_shape = _positive_sizes(pooled_shape, "pooled_shape", 2)
    return roi_pool(x, rois, pooled_size=pooled_shape, spatial_scale=spatial_scale, device=device)

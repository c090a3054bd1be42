"""The ONNX pooling operators as functions: ONNX's inputs and attributes in, what the
operator returns out (see the package's docstring for the rules they translate)."""

from __future__ import annotations

import contextlib
import math
from typing import Optional, Sequence, Union

import numpy as np

from ..arguments import COORDINATE_MAX, array, choice, flag, integers, number
from ..descs import AveragePooling1Desc, LpPooling1Desc, MaxPooling2Desc, MaxUnpoolingDesc, described
from ..device import Device
from ..dtypes import DataType
from ..errors import ValidationError
from ..shapes import ceil_mode_extension
from ..functional import ArrayLike, Result, roi_pool
from ..interop import answer, on_device, unsigned_indices
from ..tensor import Tensor
from ..tensor_desc import TensorDesc

__all__ = ["max_pool", "average_pool", "lp_pool", "global_max_pool", "global_average_pool", "global_lp_pool",
           "max_unpool", "max_roi_pool"]

_AUTO_PADS = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")


def _input(x, name: str = "x"):
    """``x`` as a Tensor, or as a NumPy array {N, C, spatial...} (checked, not uploaded)."""
    return x if isinstance(x, Tensor) else array(x, name)


def _text(value):
    """A string attribute as str: ``onnx.helper.get_attribute_value`` gives bytes."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value  # refused, and shown, by the check that follows
    return value


def _geometry(spatial, kernel_shape, auto_pad="NOTSET", ceil_mode=0, dilations=None, pads=None, strides=None):
    """DirectML window fields for an ONNX pooling node over ``spatial`` input sizes, plus
    the end padding ONNX declared (before ceil_mode's extension).  Checks the attributes,
    naming them."""
    dims = len(spatial)
    kernel = integers(kernel_shape, "kernel_shape", dims, minimum=1)
    strides = integers(strides, "strides", dims, minimum=1) if strides is not None else (1,) * dims
    dilations = integers(dilations, "dilations", dims, minimum=1) if dilations is not None else (1,) * dims
    auto_pad = choice(_text(auto_pad), "auto_pad", _AUTO_PADS)
    ceil_mode = flag(ceil_mode, "ceil_mode")
    if pads is not None:
        pads = integers(pads, "pads", 2 * dims, minimum=0)
    extents = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    for i, extent in enumerate(extents):
        if extent > COORDINATE_MAX:
            raise ValidationError(
                "kernel_shape" if dilations[i] == 1 else "dilations",
                f"the window's extent (kernel_shape - 1) * dilations + 1 = {extent} in spatial dimension {i} "
                f"exceeds {COORDINATE_MAX} (2^31 - 1), the largest window poolgpu computes",
            )
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
        begin, end = list(pads[:dims]), list(pads[dims:])
    end_padding = list(end)
    if ceil_mode:
        for i, (size, ext, s) in enumerate(zip(spatial, extents, strides)):
            end_padding[i] += ceil_mode_extension(size, begin[i], end[i], ext, s)[1]
    for i, (size, b, e) in enumerate(zip(spatial, begin, end_padding)):
        if size + b + e > COORDINATE_MAX:
            name = "kernel_shape" if auto_pad.startswith("SAME") else "pads" if b + e else "x"
            raise ValidationError(
                name, f"the padded input size {size + b + e} in spatial dimension {i} (input {size} + padding {b} "
                f"+ {e}) exceeds {COORDINATE_MAX} (2^31 - 1), the largest padded size poolgpu computes",
            )
    window = dict(window_size=kernel, strides=strides, dilations=dilations,
                  start_padding=tuple(begin), end_padding=tuple(end_padding))
    return window, tuple(end)


def _transposed(desc: TensorDesc) -> TensorDesc:
    """The same memory with the spatial dimensions in reverse order."""
    return TensorDesc(desc.data_type, desc.sizes[:2] + desc.sizes[:1:-1], desc.strides[:2] + desc.strides[:1:-1],
                      desc.total_size_in_bytes)


def _reverse_spatial(window: dict) -> dict:
    return {k: tuple(reversed(v)) for k, v in window.items()}


# Core description fields -> the ONNX attributes (or inputs) they are made from.
_ONNX_NAMES = {"window_size": "kernel_shape", "start_padding": "pads", "end_padding": "pads",
               "include_padding": "count_include_pad", "input": "x", "output_indices": "Indices",
               "pooled_size": "pooled_shape", "roi": "rois"}


@contextlib.contextmanager
def _onnx_names():
    """Errors of the descriptions made here named after ONNX's attributes."""
    try:
        yield
    except ValidationError as exc:
        head, dot, rest = exc.field.partition(".")
        if head not in _ONNX_NAMES:
            raise
        raise exc.renamed(_ONNX_NAMES[head] + dot + rest) from None


def max_pool(x: ArrayLike, kernel_shape: Sequence[int], auto_pad: Union[str, bytes] = "NOTSET", ceil_mode: int = 0,
             dilations: Optional[Sequence[int]] = None, pads: Optional[Sequence[int]] = None, storage_order: int = 0,
             strides: Optional[Sequence[int]] = None, return_indices: bool = False,
             device: Optional[Device] = None) -> Union[Result, tuple]:
    """ONNX MaxPool.

    Parameters
    ----------
    x : array_like or Tensor
        X, {N, C, D1, ...} with 1 to 3 spatial dimensions, of any of the ten data types.
    kernel_shape : sequence of int
        One positive size per spatial dimension.
    auto_pad : str or bytes, default "NOTSET"
        "NOTSET" (``pads`` apply), "VALID" (no padding), "SAME_UPPER" or "SAME_LOWER"
        (bytes as ``onnx.helper.get_attribute_value`` gives them, too).
    ceil_mode : int, default 0
        0 or 1: round the output size up (a last window starting in the end padding is dropped).
    dilations, strides : sequence of int, optional
        Positive, one per spatial dimension; default None: all 1.
    pads : sequence of int, optional
        Non-negative, all begins then all ends; default None: all 0.
    storage_order : int, default 0
        0 (row-major indices) or 1 (column-major).
    return_indices : bool, default False
        Also return the Indices output.
    device : Device, optional
        Default: ``x``'s device, or the default device for arrays.

    Returns
    -------
    Y, or (Y, Indices) with int64 Indices where ``return_indices``
        NumPy arrays for array input, Tensors for a Tensor.

    Raises
    ------
    ValidationError
        Before any GPU work, naming the attribute (``kernel_shape``, ``pads``, ...) or ``x``.
    """
    x = _input(x)
    window, _ = _geometry(_spatial(x), kernel_shape, auto_pad, ceil_mode, dilations, pads, strides)
    storage_order = int(flag(storage_order, "storage_order"))
    return_indices = flag(return_indices, "return_indices")
    with _onnx_names():
        if not return_indices:
            (x,), device, as_numpy = on_device((x,), device)
            return answer(device.compile(MaxPooling2Desc(x.desc, **window))(x), as_numpy)
        plain = MaxPooling2Desc(_desc(x), output_indices=DataType.UINT64, **window)
    (x,), device, as_numpy = on_device((x,), device)
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


def average_pool(x: ArrayLike, kernel_shape: Sequence[int], auto_pad: Union[str, bytes] = "NOTSET", ceil_mode: int = 0,
                 count_include_pad: int = 0, dilations: Optional[Sequence[int]] = None,
                 pads: Optional[Sequence[int]] = None, strides: Optional[Sequence[int]] = None,
                 device: Optional[Device] = None) -> Result:
    """ONNX AveragePool.

    Parameters
    ----------
    x : array_like or Tensor
        X, {N, C, D1, ...} with 1 to 3 spatial dimensions, float32 or float16.
    kernel_shape, auto_pad, ceil_mode, dilations, pads, strides, device
        As for :func:`max_pool`.
    count_include_pad : int, default 0
        0 or 1: divide by the window's size including the declared padding.

    Returns
    -------
    Y
        A NumPy array for array input, a Tensor for a Tensor.

    Raises
    ------
    ValidationError
        Before any GPU work, naming the attribute or ``x``.
    """
    x = _input(x)
    window, declared_end = _geometry(_spatial(x), kernel_shape, auto_pad, ceil_mode, dilations, pads, strides)
    include = flag(count_include_pad, "count_include_pad")
    with _onnx_names():
        # the include-padding divisor counts the declared end padding, not ceil_mode's extension
        desc = AveragePooling1Desc(_desc(x), include_padding=include, counted_end_padding=declared_end, **window)
    (x,), device, as_numpy = on_device((x,), device)
    return answer(device.compile(desc)(x), as_numpy)


def lp_pool(x: ArrayLike, kernel_shape: Sequence[int], auto_pad: Union[str, bytes] = "NOTSET", ceil_mode: int = 0,
            dilations: Optional[Sequence[int]] = None, pads: Optional[Sequence[int]] = None, p: float = 2,
            strides: Optional[Sequence[int]] = None, device: Optional[Device] = None) -> Result:
    """ONNX LpPool (padding contributes nothing to the sum).

    Parameters
    ----------
    x : array_like or Tensor
        X, {N, C, D1, ...} with 1 to 3 spatial dimensions, float32 or float16.
    kernel_shape, auto_pad, ceil_mode, dilations, pads, strides, device
        As for :func:`max_pool`.
    p : number, default 2
        The norm's order, a number from 1 to 64.

    Returns
    -------
    Y
        A NumPy array for array input, a Tensor for a Tensor.

    Raises
    ------
    ValidationError
        Before any GPU work, naming the attribute or ``x``.
    """
    x = _input(x)
    window, _ = _geometry(_spatial(x), kernel_shape, auto_pad, ceil_mode, dilations, pads, strides)
    p = number(p, "p", minimum=1)
    with _onnx_names():
        desc = LpPooling1Desc(_desc(x), p=p, **window)
    (x,), device, as_numpy = on_device((x,), device)
    return answer(device.compile(desc)(x), as_numpy)


def _spatial(x) -> tuple:
    """The spatial sizes of a checked input (a Tensor or an array from :func:`_input`)."""
    return tuple(x.sizes[2:] if isinstance(x, Tensor) else x.shape[2:])


def _desc(x, name: str = "x") -> TensorDesc:
    """The TensorDesc ``x`` has (a Tensor) or will have once uploaded (an array: packed)."""
    if isinstance(x, Tensor):
        return x.desc
    return TensorDesc(DataType.of(x.dtype, name), x.shape)


def global_max_pool(x: ArrayLike, device: Optional[Device] = None) -> Result:
    """ONNX GlobalMaxPool: the max over all spatial dimensions, kept as size 1.

    Parameters
    ----------
    x : array_like or Tensor
        X, {N, C, D1, ...} with 1 to 3 spatial dimensions.
    device : Device, optional
        As for :func:`max_pool`.

    Returns
    -------
    Y
        {N, C, 1, ...}.

    Raises
    ------
    ValidationError
        Naming ``x`` where it is not such an array or Tensor.
    """
    x = _input(x)
    return max_pool(x, _spatial(x), device=device)


def global_average_pool(x: ArrayLike, device: Optional[Device] = None) -> Result:
    """ONNX GlobalAveragePool: the mean over all spatial dimensions, kept as size 1.

    Parameters
    ----------
    x : array_like or Tensor
        X, {N, C, D1, ...} with 1 to 3 spatial dimensions, float32 or float16.
    device : Device, optional
        As for :func:`max_pool`.

    Returns
    -------
    Y
        {N, C, 1, ...}.

    Raises
    ------
    ValidationError
        Naming ``x`` where it is not such an array or Tensor.
    """
    x = _input(x)
    return average_pool(x, _spatial(x), device=device)


def global_lp_pool(x: ArrayLike, p: float = 2, device: Optional[Device] = None) -> Result:
    """ONNX GlobalLpPool: ``(sum |x|^p)^(1/p)`` over all spatial dimensions, kept as size 1.

    Parameters
    ----------
    x : array_like or Tensor
        X, {N, C, D1, ...} with 1 to 3 spatial dimensions, float32 or float16.
    p : float, default 2
        A finite number from 1 to 64.
    device : Device, optional
        As for :func:`max_pool`.

    Returns
    -------
    Y
        {N, C, 1, ...}.

    Raises
    ------
    ValidationError
        Naming ``x`` or ``p``.
    """
    x = _input(x)
    return lp_pool(x, _spatial(x), p=p, device=device)


def max_unpool(x: ArrayLike, indices: ArrayLike, kernel_shape: Sequence[int], pads: Optional[Sequence[int]] = None,
               strides: Optional[Sequence[int]] = None, output_shape: Optional[Sequence[int]] = None,
               device: Optional[Device] = None) -> Result:
    """ONNX MaxUnpool: ``x`` scattered to its (int64) ``indices`` in zeros.

    Without ``output_shape`` the output has the inferred shape, MaxPool's input shape
    ``(in - 1) * stride - pads_begin - pads_end + kernel`` per spatial dimension.  With
    ``output_shape`` (the full shape, N and C as ``x``'s) the output has that shape and the
    indices are flat positions in it, as ONNX Runtime and PyTorch read them: unpooling
    MaxPool's results with ``output_shape=x.shape`` puts every maximum back where it came
    from, whatever ``x``'s sizes.  Without ``output_shape``, an index outside the inferred
    output is an error (as in ONNX Runtime): pass ``output_shape``.  Where indices repeat the
    largest j wins; with ``output_shape``, indices outside it are ignored (ONNX leaves both
    open).

    Parameters
    ----------
    x : array_like or Tensor
        X, {N, C, D1, ...} with 1 to 3 spatial dimensions, of any of the ten data types.
    indices : array_like or Tensor
        I, x's sizes, int64 (also int32, uint32, uint64).
    kernel_shape, pads, strides
        As for :func:`max_pool`.
    output_shape : sequence of int, optional
        The output's full shape; default None: the inferred one.
    device : Device, optional
        As for :func:`max_pool`.

    Returns
    -------
    Y
        A NumPy array for array input, a Tensor for a Tensor.

    Raises
    ------
    ValidationError
        Before any GPU work, naming the attribute or input; ``indices`` outside the
        inferred output where ``output_shape`` is None (indices given as a Tensor are read
        back for this check).
    """
    x = _input(x)
    given = _input(indices, "indices")
    indices = unsigned_indices(given)
    window, _ = _geometry(_spatial(x), kernel_shape, pads=pads, strides=strides)
    sizes = tuple(x.sizes if isinstance(x, Tensor) else x.shape)
    if output_shape is None:
        shape = sizes[:2] + tuple(
            (size - 1) * s - begin - end + k
            for size, s, begin, end, k in zip(sizes[2:], window["strides"], window["start_padding"],
                                              window["end_padding"], window["window_size"])
        )
        if any(size < 1 for size in shape):
            raise ValidationError("pads", f"the inferred output shape {shape} ((in - 1) * strides - pads_begin - "
                                          "pads_end + kernel_shape) has a size below 1; use smaller pads")
    else:
        shape = integers(output_shape, "output_shape", minimum=1, maximum=None)
        if len(shape) != len(sizes) or shape[:2] != sizes[:2]:
            raise ValidationError("output_shape", f"expected {len(sizes)} sizes starting with X's N and C "
                                                  f"{sizes[:2]}, got {shape}")
    with _onnx_names():
        desc = MaxUnpoolingDesc(_desc(x), _desc(indices, "indices"),
                                described(_desc(x).data_type, shape, "output_shape"))
    if output_shape is None:
        _check_inferred_output_holds(given, shape)
    (x, indices), device, as_numpy = on_device((x, indices), device, ("x", "indices"))
    return answer(device.compile(desc)(x, indices), as_numpy)


def _check_inferred_output_holds(indices, shape: tuple) -> None:
    """Refuse indices outside the inferred output, as ONNX Runtime does: they come from a
    MaxPool input larger than the inferred shape (odd sizes), whose indices only
    ``output_shape`` places right.  (A Tensor's indices are read back for this.)"""
    values = indices.numpy() if isinstance(indices, Tensor) else indices
    total = math.prod(shape)
    outside = (values < 0) | (values >= total)
    if outside.any():
        j = int(np.argmax(outside.ravel()))
        raise ValidationError(
            "indices", f"index {int(values.ravel()[j])} (element {j}) lies outside the inferred output shape "
            f"{shape} ({total} elements); indices of a MaxPool whose input was larger than that (odd sizes) "
            "need output_shape: pass MaxPool's input shape as output_shape",
        )


def max_roi_pool(x: ArrayLike, rois: ArrayLike, pooled_shape: Sequence[int], spatial_scale: float = 1.0,
                 device: Optional[Device] = None) -> Result:
    """ONNX MaxRoiPool: ``x`` (N, C, H, W), ``rois`` (num_rois, 5) of
    ``[batch_id, x1, y1, x2, y2]`` -> Y (num_rois, C, pooled_shape[0], pooled_shape[1]).

    ONNX leaves the bin arithmetic to implementations; this is DirectML's ROI_POOLING (which
    implements MaxRoiPool), as :func:`poolgpu.roi_pool` documents.

    Parameters
    ----------
    x : array_like or Tensor
        X, (N, C, H, W), float32 or float16.
    rois : array_like or Tensor
        (num_rois, 5), converted to ``x``'s type (a {1, 1, R, 5} Tensor of it).
    pooled_shape : sequence of int
        (height, width), positive.
    spatial_scale : float, default 1.0
        A positive finite number (also in float32).
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
    pooled_shape = integers(pooled_shape, "pooled_shape", 2, minimum=1)
    spatial_scale = number(spatial_scale, "spatial_scale", positive=True)
    with _onnx_names():
        return roi_pool(x, rois, pooled_size=pooled_shape, spatial_scale=spatial_scale, device=device)

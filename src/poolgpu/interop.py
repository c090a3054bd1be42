"""What comes in goes out: the front ends' (functional, ONNX, PyTorch conventions) handling of
their array arguments.  NumPy arrays, and anything NumPy reads without going through Python
objects (``__array__``, ``__dlpack__``), are uploaded and their results read back;
``pg.Tensor`` s stay on their device and come back as Tensors.  A type DirectML lacks is
refused with a ValidationError saying what to convert to."""

from __future__ import annotations

import numpy as np

from .device import default_device
from .dtypes import DataType
from .errors import ValidationError
from .tensor import Tensor
from .tensor_desc import TensorDesc

_SUPPORTED = ", ".join(t.numpy.name for t in DataType)
# What to convert a type DirectML lacks to (the closest type that keeps the values).
_CONVERSIONS = {"float64": "float32", "bfloat16": "float32", "float128": "float32", "longdouble": "float32",
                "bool": "uint8", "complex64": None, "complex128": None, "object": None}


def _dtype_name(dtype) -> str:
    """'float64' for np.dtype('float64'), torch.float64 or jnp.float64 alike."""
    if isinstance(dtype, np.dtype):
        return dtype.name
    return str(dtype).rsplit(".", 1)[-1]


def check_dtype(dtype, field: str) -> None:
    """Refuse an array type DirectML lacks, saying what to convert to."""
    name = _dtype_name(dtype)
    if name.upper() in DataType.__members__:
        return
    target = _CONVERSIONS.get(name)
    if target is None and name.startswith("float"):
        target = "float32"
    how = (f"convert it first, e.g. x.astype(np.{target}) (NumPy) or x.to(torch.{target}) (PyTorch)" if target
           else "convert it first to one of these, e.g. x.astype(np.float32)")
    raise ValidationError(
        field, f"{name} is not a data type poolgpu supports (it takes {_SUPPORTED}); {how}. "
               "poolgpu never narrows a type silently",
    )


def as_array(x, field: str = "x") -> np.ndarray:
    """``x`` as a NumPy array of a supported type: an ndarray as is; an object with
    ``__array__`` or ``__dlpack__`` (a CPU torch.Tensor, a JAX array) read by NumPy."""
    if isinstance(x, np.ndarray):
        array = x
    else:
        dtype = getattr(x, "dtype", None)
        if dtype is not None and not isinstance(dtype, (str, type)):
            check_dtype(dtype, field)  # before NumPy, which cannot even read some (bfloat16)
        if hasattr(x, "__array__") or not hasattr(x, "__dlpack__"):
            array = np.asarray(x)
        else:
            array = np.from_dlpack(x)
    check_dtype(array.dtype, field)
    return array


def on_device(inputs, device, names=("x",)):
    """(tensors, device, as_numpy): non-Tensor inputs read as NumPy arrays (:func:`as_array`;
    ``names`` name them in errors) and uploaded packed to ``device`` (default: the default
    device); Tensor inputs kept, on their own device unless one is given."""
    as_numpy = not isinstance(inputs[0], Tensor)
    arrays = [x if isinstance(x, Tensor) else as_array(x, names[i] if i < len(names) else f"input {i}")
              for i, x in enumerate(inputs)]
    if device is None:
        device = default_device() if as_numpy else inputs[0].device
    tensors = [x if isinstance(x, Tensor) else device.upload(x) for x in arrays]
    return tensors, device, as_numpy


def answer(outputs, as_numpy: bool):
    """Outputs in kind: read back to NumPy when the inputs were NumPy arrays."""
    if not as_numpy:
        return outputs
    if isinstance(outputs, Tensor):
        return outputs.numpy()
    return tuple(t.numpy() for t in outputs)


_UNSIGNED_INDICES = {DataType.INT32: DataType.UINT32, DataType.INT64: DataType.UINT64}


def unsigned_indices(indices):
    """Signed indices (PyTorch's and ONNX's int64) as their unsigned bits, no copy: a
    negative index becomes one far outside any output.  A Tensor gives a Tensor over the
    same buffer, anything else an array (as_array) or its view."""
    if isinstance(indices, Tensor):
        unsigned = _UNSIGNED_INDICES.get(indices.data_type)
        if unsigned is None:
            return indices
        d = indices.desc
        return indices.device.wrap(indices.buffer, TensorDesc(unsigned, d.sizes, d.strides, d.total_size_in_bytes),
                                   indices.offset)
    indices = as_array(indices, "indices")
    unsigned = _UNSIGNED_INDICES.get(DataType.of(indices.dtype, "indices")) if indices.dtype.kind == "i" else None
    return indices if unsigned is None else indices.view(unsigned.numpy)

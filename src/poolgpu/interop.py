"""What comes in goes out: the front ends' (functional, ONNX, PyTorch conventions) handling of
their array arguments.  NumPy arrays (or anything NumPy reads) are uploaded and their
results read back; ``pg.Tensor`` s stay on their device and come back as Tensors."""

from __future__ import annotations

import numpy as np

from .device import default_device
from .dtypes import DataType
from .tensor import Tensor
from .tensor_desc import TensorDesc


def on_device(inputs, device):
    """(tensors, device, as_numpy): NumPy inputs uploaded packed to ``device`` (default: the
    default device); Tensor inputs kept, on their own device unless one is given.
    ``as_numpy`` says whether the first input was not a Tensor (see :func:`answer`)."""
    as_numpy = not isinstance(inputs[0], Tensor)
    if device is None:
        device = default_device() if as_numpy else inputs[0].device
    tensors = [x if isinstance(x, Tensor) else device.upload(np.asarray(x)) for x in inputs]
    return tensors, device, as_numpy


def answer(outputs, as_numpy: bool):
    """Outputs (a Tensor or a tuple of them) in kind: read back to NumPy when the inputs were
    NumPy arrays."""
    if not as_numpy:
        return outputs
    if isinstance(outputs, Tensor):
        return outputs.numpy()
    return tuple(t.numpy() for t in outputs)


_UNSIGNED_INDICES = {DataType.INT32: DataType.UINT32, DataType.INT64: DataType.UINT64}


def unsigned_indices(indices):
    """Signed indices (PyTorch's and ONNX's int64) as their unsigned bits, no copy: a
    negative index becomes one far outside any output.  A Tensor gives a Tensor over the
    same buffer, an array a view; other types are returned as they are."""
    if isinstance(indices, Tensor):
        unsigned = _UNSIGNED_INDICES.get(indices.data_type)
        if unsigned is None:
            return indices
        d = indices.desc
        return indices.device.wrap(indices.buffer, TensorDesc(unsigned, d.sizes, d.strides, d.total_size_in_bytes),
                                   indices.offset)
    indices = np.asarray(indices)
    unsigned = _UNSIGNED_INDICES.get(DataType.of(indices.dtype, "indices")) if indices.dtype.kind == "i" else None
    return indices if unsigned is None else indices.view(unsigned.numpy)

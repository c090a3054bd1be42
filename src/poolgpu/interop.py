"""What comes in goes out: the front ends' (functional, ONNX, PyTorch conventions) handling of
their array arguments.  NumPy arrays, and anything NumPy reads without going through Python
objects (``__array__``, ``__dlpack__``), are read by :func:`poolgpu.arguments.array` (which
refuses a type DirectML lacks, saying what to convert to), uploaded, and their results read
back; ``pg.Tensor`` s stay on their device and come back as Tensors."""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Tuple, Union

import numpy as np

from .arguments import array
from .device import Device, default_device
from .dtypes import DataType
from .tensor import Tensor
from .tensor_desc import TensorDesc, packed_desc

__all__ = ["on_device", "answer", "round_trip", "unsigned_indices"]


def on_device(inputs: Sequence[Any], device: Optional[Device],
              names: Sequence[str] = ("x",)) -> Tuple[list, Device, bool]:
    """(tensors, device, as_numpy): non-Tensor inputs read as NumPy arrays
    (:func:`poolgpu.arguments.array`; ``names`` name them in errors) and uploaded packed to
    ``device`` (default: the default device); Tensor inputs kept, on their own device unless
    one is given.

    Parameters
    ----------
    inputs : sequence
        A call's array arguments: ``pg.Tensor`` s, NumPy arrays, or anything NumPy reads
        through ``__array__`` or ``__dlpack__``.  The first one decides the kind of answer.
    device : Device or None
        Where to upload; None: the first input's device if it is a Tensor, else
        ``pg.default_device()``.
    names : sequence of str, default ("x",)
        The inputs' names in errors (``f"input {i}"`` beyond them).

    Returns
    -------
    tensors : list of Tensor
        One per input.
    device : Device
        The device the call runs on.
    as_numpy : bool
        Whether the first input was not a Tensor (pass it to :func:`answer`).

    Raises
    ------
    ValidationError
        Naming the input NumPy cannot read, of a type DirectML lacks, or of 0 elements.
    DeviceError
        The device is lost or out of memory.
    """
    as_numpy = not isinstance(inputs[0], Tensor)
    arrays = [x if isinstance(x, Tensor) else array(x, names[i] if i < len(names) else f"input {i}")
              for i, x in enumerate(inputs)]
    if device is None:
        device = default_device() if as_numpy else inputs[0].device
    tensors = [x if isinstance(x, Tensor) else device.upload(x) for x in arrays]
    return tensors, device, as_numpy


def answer(outputs: Union[Tensor, Tuple[Tensor, ...]],
           as_numpy: bool) -> Union[Tensor, np.ndarray, tuple]:
    """Outputs in kind: read back to NumPy when the inputs were NumPy arrays.

    Parameters
    ----------
    outputs : Tensor or tuple of Tensor
        An op's results.
    as_numpy : bool
        :func:`on_device`'s third result.

    Returns
    -------
    Tensor, ndarray or tuple of them
        ``outputs`` itself, or each read back to a new NumPy array.
    """
    if not as_numpy:
        return outputs
    if isinstance(outputs, Tensor):
        return outputs.numpy()
    return tuple(t.numpy() for t in outputs)


def round_trip(describe: Callable[..., Any], inputs: Sequence[Any], device: Optional[Device] = None,
               names: Sequence[str] = ("x",)) -> Union[Tensor, np.ndarray, tuple]:
    """The operator ``describe(*tensor_descs)`` (a description of the inputs' TensorDescs)
    run on ``inputs``, answered in kind (:func:`on_device`, then :func:`answer`).

    Where no input is a ``pg.Tensor`` the call is a round trip through buffers the device
    reuses: each array written from its own memory into a buffer of the device's pool, the
    op's dispatches and the copies of its results into a reused staging buffer in one
    submission, one read-back (docs/design.md, "Host round trips").

    Parameters
    ----------
    describe : callable
        TensorDescs of the inputs -> the operator's description (validated before any GPU work).
    inputs, device, names
        As for :func:`on_device`.

    Returns
    -------
    Tensor, ndarray or tuple of them
        As :func:`answer` gives them.

    Raises
    ------
    ValidationError
        Naming the input NumPy cannot read, of a type DirectML lacks, or of 0 elements, or
        what ``describe`` refuses.
    DeviceError
        The device is lost or out of memory, or the results were not back within its ``timeout``.
    """
    if any(isinstance(x, Tensor) for x in inputs):
        tensors, device, as_numpy = on_device(inputs, device, names)
        return answer(device.compile(describe(*(t.desc for t in tensors)))(*tensors), as_numpy)
    arrays = [array(x, names[i] if i < len(names) else f"input {i}") for i, x in enumerate(inputs)]
    descs = [packed_desc(DataType.of(a.dtype, names[i] if i < len(names) else f"input {i}"), a.shape)
             for i, a in enumerate(arrays)]
    device = default_device() if device is None else device
    op = device.compile(describe(*descs))
    if len(descs) != len(op._inputs) or any(d != expected for d, (_, expected) in zip(descs, op._inputs)):
        return answer(op(*(device.upload(a) for a in arrays)), True)  # (the op says what does not match)
    results = op._round_trip(arrays)
    return results[0] if len(results) == 1 else results


_UNSIGNED_INDICES = {DataType.INT32: DataType.UINT32, DataType.INT64: DataType.UINT64}


def unsigned_indices(indices: Any) -> Union[Tensor, np.ndarray]:
    """Signed indices (PyTorch's and ONNX's int64) as their unsigned bits, no copy: a
    negative index becomes one far outside any output.  A Tensor gives a Tensor over the
    same buffer, anything else an array (:func:`poolgpu.arguments.array`) or its view.

    Parameters
    ----------
    indices : Tensor or array-like
        INT32 or INT64 indices are reinterpreted as UINT32 or UINT64; others returned as
        they are.

    Returns
    -------
    Tensor or numpy.ndarray

    Raises
    ------
    ValidationError
        Naming ``indices`` where NumPy cannot read it or its type is one DirectML lacks.
    """
    if isinstance(indices, Tensor):
        unsigned = _UNSIGNED_INDICES.get(indices.data_type)
        if unsigned is None:
            return indices
        d = indices.desc
        return indices.device.wrap(indices.buffer, TensorDesc(unsigned, d.sizes, d.strides, d.total_size_in_bytes),
                                   indices.offset)
    indices = array(indices, "indices")
    unsigned = _UNSIGNED_INDICES.get(DataType.of(indices.dtype, "indices")) if indices.dtype.kind == "i" else None
    return indices if unsigned is None else indices.view(unsigned.numpy)

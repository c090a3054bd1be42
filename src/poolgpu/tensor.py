"""Tensor: a tensor in a GPU buffer of a Device."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .dtypes import DataType
from .tensor_desc import TensorDesc

if TYPE_CHECKING:  # (device imports this module)
    from .device import Device


class Tensor:
    """A tensor in a GPU buffer: ``desc`` says how its logical values sit from ``offset``."""

    __slots__ = ("device", "desc", "buffer", "offset", "__weakref__")

    def __init__(self, device: "Device", desc: TensorDesc, buffer, offset: int = 0):
        self.device = device
        self.desc = desc
        self.buffer = buffer
        self.offset = offset

    @property
    def sizes(self) -> tuple:
        return self.desc.sizes

    @property
    def data_type(self) -> DataType:
        return self.desc.data_type

    # NumPy habits: ``t.shape``, ``t.dtype`` and ``np.asarray(t)`` (a read-back), as for arrays.

    @property
    def shape(self) -> tuple:
        """The sizes, as ``ndarray.shape`` names them."""
        return self.desc.sizes

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of the elements."""
        return self.desc.data_type.numpy

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """``np.asarray(t)``: the values read back (always a new array, so ``copy=False``
        cannot be honoured and raises, as NumPy 2 asks)."""
        if copy is False:
            raise ValueError("a poolgpu Tensor lives on the GPU: reading it back always copies (use copy=None)")
        array = self.numpy()
        return array if dtype is None else array.astype(dtype, copy=False)

    def numpy(self) -> np.ndarray:
        """The logical values, as a new packed array of ``sizes``."""
        desc = self.desc
        raw = self.device._read(self.buffer, self.offset, desc.total_size_in_bytes)
        item = desc.data_type.size
        flat = np.frombuffer(raw, dtype=desc.data_type.numpy, count=len(raw) // item)
        view = np.lib.stride_tricks.as_strided(flat, desc.sizes, tuple(s * item for s in desc.strides))
        return np.array(view)

    def __repr__(self) -> str:
        return f"Tensor({self.desc.data_type.name}, sizes={self.sizes}, offset={self.offset})"

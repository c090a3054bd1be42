"""Tensor: a tensor in a GPU buffer of a Device."""

from __future__ import annotations

import numpy as np

from .dtypes import DataType
from .tensor_desc import TensorDesc


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

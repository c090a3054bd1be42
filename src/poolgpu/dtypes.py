"""DataType: DirectML's tensor data types, their NumPy mapping and how shaders store them.

Shaders see every tensor as an array of u32 words.  A type's *storage* says how its
elements sit in those words: ``b32`` one element per word, ``b16``/``b8`` two/four elements
packed little-endian in a word, ``b64`` one element in two words (low word first).  So no
type needs ``shader-f16`` or ``shader-int64``.
"""

from __future__ import annotations

import enum

import numpy as np

from .errors import ValidationError


class DataType(enum.IntEnum):
    # Values are DirectML's DML_TENSOR_DATA_TYPE numbers.
    FLOAT32 = 1
    FLOAT16 = 2
    UINT32 = 3
    UINT16 = 4
    UINT8 = 5
    INT32 = 6
    INT16 = 7
    INT8 = 8
    UINT64 = 10
    INT64 = 11

    @property
    def numpy(self) -> np.dtype:
        return np.dtype(self.name.lower())

    @property
    def size(self) -> int:
        """Bytes per element."""
        return self.numpy.itemsize

    @property
    def storage(self) -> str:
        return f"b{8 * self.size}"

    @property
    def is_float(self) -> bool:
        return self in (DataType.FLOAT32, DataType.FLOAT16)

    @classmethod
    def of(cls, value, field: str = "data_type") -> "DataType":
        """A DataType from a DataType, a NumPy dtype or scalar type, or a name."""
        if isinstance(value, DataType):
            return value
        if isinstance(value, str):
            name = value.strip().upper()
            if name in cls.__members__:
                return cls[name]
        try:
            name = np.dtype(value).name.upper()
        except Exception:  # NumPy raises TypeError, ValueError, ... for what is no dtype
            name = None
        if name in cls.__members__:
            return cls[name]
        supported = ", ".join(m.name for m in cls)
        raise ValidationError(field, f"unsupported data type {value!r}; expected one of {supported}")


FLOAT_TYPES = frozenset({DataType.FLOAT32, DataType.FLOAT16})
INDEX_TYPES = frozenset({DataType.UINT32, DataType.UINT64})
ALL_TYPES = frozenset(DataType)

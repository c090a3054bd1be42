"""DataType: DirectML's tensor data types, their NumPy mapping and how shaders store them.

Shaders see every tensor as an array of u32 words.  A type's *storage* says how its
elements sit in those words: ``b32`` one element per word, ``b16``/``b8`` two/four elements
packed little-endian in a word, ``b64`` one element in two words (low word first).  So no
type needs ``shader-f16`` or ``shader-int64``.

BFLOAT16 (not DirectML's: the upper half of a float32) is stored as FLOAT16 is.  NumPy has
no bfloat16 of its own: its arrays are ``ml_dtypes.bfloat16`` (an optional package), which
:attr:`DataType.numpy` imports only when asked for BFLOAT16.
"""

from __future__ import annotations

import enum
from typing import Union

import numpy as np

from .errors import ValidationError

__all__ = ["DataType"]

_OF_DTYPE: dict = {}  # NumPy dtype -> DataType, for DataType.of (a dozen entries at most)


class DataType(enum.IntEnum):
    """DirectML's tensor data types, numbered as DML_TENSOR_DATA_TYPE: FLOAT32, FLOAT16,
    UINT32, UINT16, UINT8, INT32, INT16, INT8, UINT64, INT64; and BFLOAT16 (the upper half
    of a float32, taken wherever FLOAT16 is), which DirectML lacks, numbered 16 as ONNX's
    TensorProto numbers it.

    Parameters
    ----------
    value : int
        DirectML's number of the type (``DataType(1) is DataType.FLOAT32``); use
        :meth:`DataType.of` to convert a NumPy dtype or a name.
    """

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
    BFLOAT16 = 16

    def __str__(self) -> str:
        """The name (``FLOAT32``), not the number that IntEnum prints."""
        return self.name

    def __format__(self, spec: str) -> str:
        # f"{t}" reads as print(t); a numeric spec (f"{t:d}") formats the number
        return self.name if not spec else int.__format__(int(self), spec)

    @property
    def numpy(self) -> np.dtype:
        """The NumPy dtype of the elements (BFLOAT16: ``ml_dtypes.bfloat16``'s).

        Raises
        ------
        ValidationError
            For BFLOAT16 where ``ml_dtypes`` is not installed (saying how to install it).
        """
        if self is DataType.BFLOAT16:
            return _bfloat16()
        return np.dtype(self.name.lower())

    @property
    def size(self) -> int:
        """Bytes per element."""
        return 2 if self is DataType.BFLOAT16 else self.numpy.itemsize

    @property
    def storage(self) -> str:
        """How shaders store the elements in u32 words: ``"b8"``, ``"b16"``, ``"b32"`` or ``"b64"``."""
        return f"b{8 * self.size}"

    @property
    def is_float(self) -> bool:
        """Whether the type is FLOAT32, FLOAT16 or BFLOAT16."""
        return self in FLOAT_TYPES

    @classmethod
    def of(cls, value: Union["DataType", str, np.dtype, type], field: str = "data_type") -> "DataType":
        """A DataType from a DataType, a NumPy dtype or scalar type, or a name.

        Parameters
        ----------
        value : DataType, numpy.dtype, NumPy scalar type or str
            E.g. ``DataType.UINT8``, ``np.uint8``, ``np.dtype("uint8")``, ``"uint8"`` or
            ``"UINT8"``; not a torch dtype (the error names the NumPy one to pass).
        field : str, default "data_type"
            The field or argument named in the error.

        Returns
        -------
        DataType

        Raises
        ------
        ValidationError
            Naming ``field`` where ``value`` is no type DirectML has (float64, bool, ...).
        """
        if isinstance(value, DataType):
            return value
        known = _OF_DTYPE.get(value) if isinstance(value, np.dtype) else None
        if known is not None:  # (a host array's call asks this of its dtype every time)
            return known
        if isinstance(value, str):
            name = value.strip().upper()
            if name in cls.__members__:
                return cls[name]
        try:
            name = np.dtype(value).name.upper()
        except Exception:  # NumPy raises TypeError, ValueError, ... for what is no dtype
            name = None
        if name in cls.__members__:
            if isinstance(value, np.dtype):
                _OF_DTYPE[value] = cls[name]
            return cls[name]
        supported = ", ".join(m.name for m in cls)
        if type(value).__module__.split(".")[0] == "torch":
            # torch dtypes are not NumPy's: name the one to pass instead
            torch_name = str(value).rsplit(".", 1)[-1]
            numpy_name = "ml_dtypes.bfloat16" if torch_name == "bfloat16" else f"np.{torch_name}"
            hint = (f"pass the NumPy dtype or its name, e.g. {numpy_name} or {torch_name!r}"
                    if torch_name.upper() in cls.__members__
                    else f"{torch_name} is none of poolgpu's types either: pass the NumPy dtype or name of one of "
                         f"{supported}, e.g. 'float32'")
            raise ValidationError(field, f"a torch dtype ({value}) is not taken here; {hint} "
                                         "(poolgpu.torch takes torch tensors)")
        raise ValidationError(field, f"unsupported data type {value!r}; expected one of {supported}")


def _bfloat16() -> np.dtype:
    try:
        import ml_dtypes
    except ImportError:
        raise ValidationError(
            "data_type", "BFLOAT16 values as NumPy arrays need the ml_dtypes package (pip install ml_dtypes), whose "
                         "ml_dtypes.bfloat16 is NumPy's bfloat16; poolgpu.torch takes torch.bfloat16 tensors without it",
        ) from None
    return np.dtype(ml_dtypes.bfloat16)


FLOAT_TYPES = frozenset({DataType.FLOAT32, DataType.FLOAT16, DataType.BFLOAT16})
INDEX_TYPES = frozenset({DataType.UINT32, DataType.UINT64})
ALL_TYPES = frozenset(DataType)

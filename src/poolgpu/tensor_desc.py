"""TensorDesc: DirectML's buffer tensor description (sizes, strides in elements, total size)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from .arguments import U32_MAX, integer, integers
from .dtypes import DataType
from .errors import ValidationError

__all__ = ["TensorDesc", "MAX_ELEMENTS", "packed_desc", "packed_strides", "calc_buffer_tensor_size", "strides_alias"]

#: At most this many elements in a tensor, and its largest element offset (DirectML's
#: UINT sizes and strides; the kernels address elements with u32 offsets).
MAX_ELEMENTS = U32_MAX
#: DirectML's TotalTensorSizeInBytes is a UINT64.
MAX_TOTAL_SIZE_IN_BYTES = 2**64 - 1
# Above this many elements the exact aliasing check (enumerating every offset) is too slow;
# larger outputs must pass the sorted-strides rule.
_EXACT_ALIAS_CHECK_LIMIT = 1 << 24


def packed_strides(sizes: Sequence[int]) -> tuple:
    """Row-major strides in elements.

    Parameters
    ----------
    sizes : sequence of int

    Returns
    -------
    tuple of int
    """
    strides, step = [], 1
    for size in reversed(sizes):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def calc_buffer_tensor_size(data_type: DataType, sizes: Sequence[int], strides: Sequence[int]) -> int:
    """DirectML's DMLCalcBufferTensorSize: bytes spanned by the tensor, rounded up to 4.

    Parameters
    ----------
    data_type : DataType
    sizes, strides : sequence of int
        Strides in elements.

    Returns
    -------
    int
        ``(1 + sum((size - 1) * stride)) * element_size``, rounded up to a multiple of 4.
    """
    last = sum((s - 1) * st for s, st in zip(sizes, strides))
    size = (1 + last) * data_type.size
    return (size + 3) & ~3


@dataclass(frozen=True, init=False)
class TensorDesc:
    """DirectML's DML_BUFFER_TENSOR_DESC: a tensor's data type, sizes and layout.

    Parameters
    ----------
    data_type : DataType, NumPy dtype or str
        The element type (``pg.DataType.FLOAT32``, ``np.float16``, ``"uint8"``, ...).
    sizes : sequence of int
        3, 4 or 5 positive sizes ``{N, C, [D,] [H,] W}``; at most 2^32 - 1 elements in all.
    strides : sequence of int, optional
        Strides in elements, one per dimension, each from 0 to 2^32 - 1 (0 broadcasts);
        the largest element offset ``sum((size - 1) * stride)`` is at most 2^32 - 1.
        Default None: packed row-major.
    total_size_in_bytes : int, optional
        The buffer bytes the tensor may use; default None: DirectML's
        ``DMLCalcBufferTensorSize``, ``(1 + sum((size - 1) * stride)) * element_size``
        rounded up to a multiple of 4.  A smaller value is an error.

    Attributes
    ----------
    data_type : DataType
    sizes : tuple of int
    strides : tuple of int
        Always filled in.
    total_size_in_bytes : int

    Raises
    ------
    ValidationError
        Naming ``data_type``, ``sizes``, ``strides`` or ``total_size_in_bytes`` when one is
        of the wrong type, out of range or inconsistent with the others.
    """

    data_type: DataType
    sizes: tuple
    strides: tuple
    total_size_in_bytes: int

    def __init__(self, data_type: Any, sizes: Sequence[int], strides: Optional[Sequence[int]] = None,
                 total_size_in_bytes: Optional[int] = None) -> None:
        data_type = DataType.of(data_type)
        sizes = integers(sizes, "sizes", maximum=None)  # bounded by the element count below
        if not 3 <= len(sizes) <= 5:
            raise ValidationError("sizes", f"expected 3, 4 or 5 dimensions {{N, C, [D,] [H,] W}}, got {len(sizes)}: {sizes}")
        if any(s < 1 for s in sizes):
            raise ValidationError("sizes", f"every size must be positive, got {sizes}")
        if math.prod(sizes) > MAX_ELEMENTS:
            raise ValidationError("sizes", f"at most 2^32 - 1 elements, got {math.prod(sizes)} for {sizes}")
        if strides is None:
            strides = packed_strides(sizes)
        else:
            strides = integers(strides, "strides", len(sizes), minimum=0)
            last = sum((size - 1) * stride for size, stride in zip(sizes, strides))
            if last > MAX_ELEMENTS:
                raise ValidationError(
                    "strides", f"strides {strides} put the last element of sizes {sizes} at offset {last}; "
                    "offsets must be at most 2^32 - 1 elements",
                )
        needed = calc_buffer_tensor_size(data_type, sizes, strides)
        if total_size_in_bytes is None:
            total_size_in_bytes = needed
        else:
            total_size_in_bytes = integer(total_size_in_bytes, "total_size_in_bytes", minimum=0,
                                          maximum=MAX_TOTAL_SIZE_IN_BYTES)
            if total_size_in_bytes < needed:
                raise ValidationError(
                    "total_size_in_bytes",
                    f"{total_size_in_bytes} bytes is too small for sizes {sizes} and strides {strides}: "
                    f"at least {needed} needed",
                )
        object.__setattr__(self, "data_type", data_type)
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "strides", strides)
        object.__setattr__(self, "total_size_in_bytes", total_size_in_bytes)

    @classmethod
    def packed(cls, data_type: Any, sizes: Sequence[int]) -> "TensorDesc":
        """A packed row-major tensor of ``sizes`` (the same as ``TensorDesc(data_type, sizes)``).

        Parameters
        ----------
        data_type : DataType, NumPy dtype or str
        sizes : sequence of int

        Returns
        -------
        TensorDesc
        """
        return cls(data_type, sizes)

    @property
    def rank(self) -> int:
        """The number of dimensions (3, 4 or 5)."""
        return len(self.sizes)

    @property
    def element_count(self) -> int:
        """The number of (logical) elements."""
        return math.prod(self.sizes)

    @property
    def is_packed(self) -> bool:
        """Whether the strides are packed row-major."""
        return self.strides == packed_strides(self.sizes)

    def __repr__(self) -> str:
        return (
            f"TensorDesc({self.data_type.name}, sizes={self.sizes}, strides={self.strides}, "
            f"total_size_in_bytes={self.total_size_in_bytes})"
        )

    def check_no_aliasing(self, field: str) -> None:
        """Raise unless every element has its own memory (required of outputs).

        Parameters
        ----------
        field : str
            The field named in the error (e.g. ``"output.strides"``).

        Raises
        ------
        ValidationError
            Naming ``field`` when two elements share an offset.
        """
        if not strides_alias(self.sizes, self.strides):
            return
        raise ValidationError(
            field, f"strides {self.strides} make two elements of sizes {self.sizes} share memory; "
            "an output needs distinct memory for every element",
        )


@functools.lru_cache(maxsize=256)
def packed_desc(data_type: DataType, sizes: tuple) -> TensorDesc:
    """``TensorDesc(data_type, sizes)``, the same frozen object for the same arguments (the
    256 most recently used kept): a TensorDesc's checks cost some 50 microseconds, a tenth
    of a small call's host path, and a host array's call makes one per input.  ``sizes``:
    a tuple of Python ints (an array's ``shape``).  Raises as ``TensorDesc``; nothing is
    kept for arguments that raise."""
    return TensorDesc(data_type, sizes)


def strides_alias(sizes: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether two distinct indices map to the same element offset.

    Parameters
    ----------
    sizes, strides : sequence of int
        Strides in elements.

    Returns
    -------
    bool
    """
    dims = sorted((st, s) for s, st in zip(sizes, strides) if s > 1)
    reach = 0  # the largest offset reachable with the dimensions seen so far
    for stride, size in dims:
        if stride <= reach:
            break
        reach += (size - 1) * stride
    else:
        return False  # sorted strides each step past everything before: no overlap
    # Interleaved layouts can still be alias-free; decide exactly where that is affordable.
    count = math.prod(sizes)
    if count > _EXACT_ALIAS_CHECK_LIMIT:
        return True
    offsets = np.zeros(1, dtype=np.int64)
    for stride, size in dims:
        offsets = (offsets[:, None] + np.arange(size, dtype=np.int64)[None, :] * stride).ravel()
    return np.unique(offsets).size != offsets.size

"""Argument checks shared by the descriptions and the front ends (functional, ONNX,
PyTorch conventions): each turns a user's value into the canonical one or raises a
``ValidationError`` naming the argument.  Pure Python, no GPU."""

from __future__ import annotations

from typing import Optional

import numpy as np

from .errors import ValidationError


def int_tuple(value, field: str, length: Optional[int] = None) -> tuple:
    """``value`` (a sequence of Python or NumPy integers, ``length`` of them where given) as a
    tuple of ints; anything else is a ValidationError naming ``field``."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ValidationError(field, f"expected a sequence of integers, got {value!r}")
    items = tuple(value)
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, np.integer)):
            raise ValidationError(field, f"expected integers, got {item!r} in {value!r}")
    if length is not None and len(items) != length:
        raise ValidationError(field, f"expected {length} values, got {len(items)}: {items}")
    return tuple(int(i) for i in items)


def positive_sizes(value, field: str, length: int) -> tuple:
    """``length`` positive sizes, as int_tuple."""
    sizes = int_tuple(value, field, length)
    if any(s < 1 for s in sizes):
        raise ValidationError(field, f"every size must be positive, got {sizes}")
    return sizes

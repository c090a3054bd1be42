"""Descriptions made once per distinct set of arguments.

A description validates every field when it is made: some 50-250 microseconds of Python,
as much as the rest of a small call's host path.  The front ends (the functional API,
poolgpu.torch) make the same description for every call of the same shape, so they take it
from here: made on the first call, the same frozen object after.  Nothing is kept for
arguments that raise (every bad call is checked, and answered, again)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from enum import Enum

import numpy as np

from ..dtypes import DataType
from ..tensor_desc import TensorDesc

__all__ = ["made"]

_SIZE = 256  # distinct descriptions kept, the least recently used dropped first
_made: "OrderedDict[tuple, object]" = OrderedDict()
_lock = threading.Lock()


class _NoKey(Exception):
    """An argument without an exact, hashable form: the description is made afresh."""


# Types whose values are their own exact keys (a DataType is an IntEnum: its type tells it
# from the int).
_PLAIN = frozenset({type(None), bool, int, str, DataType, TensorDesc})


def _key(value):
    """``value`` as a hashable key that equals another's only where the arguments are the
    same: the type is part of it (``True`` is no ``1``), floats by their bits (``-0.0`` is no
    ``0.0``), sequences item by item."""
    kind = type(value)
    if kind in _PLAIN:
        return kind, value
    if kind is tuple or kind is list:
        if all(type(item) is int for item in value):  # (sizes, strides: the common case, fast)
            return kind, tuple(value)
        return kind, tuple(map(_key, value))
    if kind is float or isinstance(value, np.floating):
        return kind, float(value).hex()
    if isinstance(value, (np.integer, np.bool_, Enum)):
        return kind, value
    if kind is dict:
        return kind, tuple((_key(name), _key(item)) for name, item in value.items())
    raise _NoKey


def made(cls, *args, **fields):
    """``cls(*args, **fields)``: a description, the same object as the last call's with the
    same arguments (the ``_SIZE`` most recently used kept).

    Arguments of other kinds than None, bools, ints, floats, strings, enums, TensorDescs and
    tuples, lists and dicts of them make the description afresh each time."""
    try:
        key = (cls, _key(args), _key(fields))
    except _NoKey:
        return cls(*args, **fields)
    with _lock:
        desc = _made.get(key)
        if desc is not None:
            _made.move_to_end(key)
            return desc
    desc = cls(*args, **fields)  # (raises for bad arguments: nothing kept)
    with _lock:
        _made[key] = desc
        while len(_made) > _SIZE:
            _made.popitem(last=False)
    return desc

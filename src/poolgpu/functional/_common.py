"""What the functional API's functions share: reading their arrays, running a description
and answering in kind, and window arguments."""

from __future__ import annotations

from typing import Any, Sequence, Union

import numpy as np

from ..arguments import is_integer
from ..interop import round_trip
from ..tensor import Tensor

__all__ = ["ArrayLike", "Result", "Window"]

# An ndarray, a Tensor, or anything NumPy reads through __array__ or __dlpack__.
ArrayLike = Any
Result = Union[np.ndarray, Tensor]


def _run(desc_factory, inputs, device, names=("x",)):
    """Build the description from the inputs' TensorDescs, run it, and answer in kind."""
    return round_trip(desc_factory, inputs, device, names)


# A window argument: one int for every spatial dimension, or one int per dimension.
Window = Union[int, Sequence[int]]


def _window(input, **fields) -> dict:
    """The window fields for a description of ``input``: one int (as PyTorch's and the
    adaptive functions' sizes) means that value in every spatial dimension."""
    dims = len(input.sizes) - 2
    return {name: (value,) * dims if is_integer(value) else value for name, value in fields.items()}

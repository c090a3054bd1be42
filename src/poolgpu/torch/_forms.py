"""The 1d, 2d and 3d forms of a function or module from one definition, their docstrings
from one template filled in for each number of spatial dimensions."""

from __future__ import annotations

from typing import Callable

_SPATIAL = {1: "L", 2: "H, W", 3: "D, H, W"}
_SIZES = {1: "an int or a tuple of one int", 2: "an int for both dimensions or a tuple of 2 ints",
          3: "an int for every dimension or a tuple of 3 ints"}
_OUTPUT = {1: "an int or a tuple of one int", 2: "an int for both dimensions, or a tuple of 2 ints or Nones "
                                                 "(None keeps the input's size)",
           3: "an int for every dimension, or a tuple of 3 ints or Nones (None keeps the input's size)"}

#: The ``device`` parameter, as every function and module documents it.
DEVICE = """device : pg.Device, optional, keyword-only
    Where to run: default the pg.Tensor input's device, else ``pg.default_device()``.  Results
    come back on the input's own torch device (CPU, CUDA, ...)."""
#: The Returns section of a function with one result.
RETURNS = """Returns
-------
output
    Of the input's kind (torch, NumPy or poolgpu) and data type."""
#: The Raises section of every function.
RAISES = """Raises
------
pg.ValidationError
    Where PyTorch raises (naming the argument), for a ``device`` that is not a pg.Device, and
    for a data type poolgpu lacks (saying what to convert to)."""


def fields(dims: int) -> dict:
    """The words a template of ``dims`` spatial dimensions is filled with: ``{d}``, ``{shape}``
    (the input's), ``{sizes}`` (a size argument's forms), ``{output_size}`` (an adaptive
    ``output_size``'s forms), ``{device}``, ``{returns}`` and ``{raises}``."""
    s = _SPATIAL[dims]
    return dict(d=dims, shape=f"(N, C, {s}) or unbatched (C, {s})", sizes=_SIZES[dims], output_size=_OUTPUT[dims],
                device=DEVICE, returns=RETURNS, raises=RAISES)


def function_forms(family: str, make: Callable[[int], Callable], doc: str, module: str, dims: tuple = (1, 2, 3),
                   **each: tuple) -> tuple:
    """``family`` 1d, 2d, 3d (the forms of ``dims``): ``make(d)`` defines the function,
    ``doc`` its docstring (``{name}``, the :func:`fields`, and ``each``'s words: one per
    form)."""
    forms = []
    for position, d in enumerate(dims):
        function = make(d)
        function.__name__ = function.__qualname__ = f"{family}{d}d"
        function.__module__ = module
        words = {key: values[position] for key, values in each.items()}
        function.__doc__ = doc.format(name=function.__name__, **fields(d), **words)
        forms.append(function)
    return tuple(forms)

"""Checks of user-given arguments, shared by the descriptions and every convention layer
(the functions, :mod:`poolgpu.onnx`, :mod:`poolgpu.torch`).

Each check returns the argument in a canonical form (Python ints, floats, tuples, bools)
or raises :class:`~poolgpu.errors.ValidationError` naming the argument and saying what was
expected.  ``bool`` is never an integer here (``True`` as a size is an error); NumPy
integer and floating scalars are accepted.  Pure Python: no GPU import.
"""

from __future__ import annotations

import math
import numbers
import reprlib
from typing import Any, Iterable, Optional

import numpy as np

from .dtypes import DataType
from .errors import ValidationError

__all__ = [
    "U32_MAX", "COORDINATE_MAX", "shown", "is_integer", "is_number",
    "sequence", "integer", "integers", "per_dimension", "flag", "choice", "number", "check_dtype", "array",
]

#: The largest value of DirectML's UINT fields (sizes, strides, window sizes, paddings) and
#: of the kernels' u32 override constants and uniforms.
U32_MAX = 2**32 - 1
#: The largest padded input size and window extent ``(window - 1) * dilation + 1``: the
#: kernels address window positions as signed 32-bit integers.
COORDINATE_MAX = 2**31 - 1

_repr = reprlib.Repr()
_repr.maxlist = _repr.maxtuple = 8
_repr.maxstring = _repr.maxother = 60


def shown(value: Any) -> str:
    """A short repr of ``value`` for an error message (long sequences and arrays cut).

    Parameters
    ----------
    value : object

    Returns
    -------
    str
    """
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    return _repr.repr(value)


def is_integer(value: Any) -> bool:
    """An int or NumPy integer scalar, not a bool.

    Parameters
    ----------
    value : object

    Returns
    -------
    bool
    """
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def is_number(value: Any) -> bool:
    """A real number (int, float, NumPy scalar), not a bool.

    Parameters
    ----------
    value : object

    Returns
    -------
    bool
    """
    return isinstance(value, (numbers.Real, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _bounds(minimum: Optional[int], maximum: Optional[int]) -> str:
    if minimum is not None and maximum is not None:
        return f"from {minimum} to {maximum}"
    if minimum is not None:
        return f"at least {minimum}"
    return f"at most {maximum}" if maximum is not None else "any integer"


def _check_range(values: tuple, name: str, original: Any, minimum: Optional[int], maximum: Optional[int]) -> None:
    for v in values:
        if (minimum is not None and v < minimum) or (maximum is not None and v > maximum):
            why = ""
            if maximum == U32_MAX and v > maximum:
                why = " (an unsigned 32-bit field)"
            elif minimum == 1 and v < 1:
                why = " (positive)"
            raise ValidationError(name, f"every value must be {_bounds(minimum, maximum)}{why}, got {shown(original)}")


def integer(value: Any, name: str, *, minimum: Optional[int] = None, maximum: Optional[int] = U32_MAX) -> int:
    """``value`` as an int within ``[minimum, maximum]``.

    Parameters
    ----------
    value : int or NumPy integer
        Not a bool.
    name : str
        The argument's name in the error.
    minimum, maximum : int, optional, keyword-only
        Inclusive bounds; defaults None (no lower bound) and ``U32_MAX`` (None: no upper
        bound).

    Returns
    -------
    int

    Raises
    ------
    ValidationError
        Naming ``name`` where ``value`` is no integer or out of range.
    """
    if not is_integer(value):
        raise ValidationError(name, f"expected an integer {_bounds(minimum, maximum)}, got {shown(value)}")
    v = int(value)
    if (minimum is not None and v < minimum) or (maximum is not None and v > maximum):
        raise ValidationError(name, f"expected an integer {_bounds(minimum, maximum)}, got {v}")
    return v


def integers(value: Any, name: str, length: Optional[int] = None, *, minimum: Optional[int] = None,
             maximum: Optional[int] = U32_MAX) -> tuple:
    """``value``, a sequence of integers (``length`` of them where given), as a tuple of
    ints within ``[minimum, maximum]``.

    Parameters
    ----------
    value : sequence of int
        Not a string; no bools.
    name : str
        The argument's name in the error.
    length : int, optional
        The number of values required; default None: any.
    minimum, maximum : int, optional, keyword-only
        Inclusive bounds; defaults None (no lower bound) and ``U32_MAX`` (None: no upper
        bound).

    Returns
    -------
    tuple of int

    Raises
    ------
    ValidationError
        Naming ``name`` where ``value`` is no sequence of integers, of the wrong length, or out of range.
    """
    items = sequence(value, name, "integers")
    for item in items:
        if not is_integer(item):
            raise ValidationError(name, f"expected a sequence of integers, got {shown(item)} in {shown(value)}")
    if length is not None and len(items) != length:
        raise ValidationError(name, f"expected {length} values, got {len(items)}: {shown(value)}")
    values = tuple(int(i) for i in items)
    _check_range(values, name, value, minimum, maximum)
    return values


def sequence(value: Any, name: str, what: str = "values") -> tuple:
    """``value``, any sequence but a string (or bytes, dict, set), as a tuple.

    Parameters
    ----------
    value : sequence
    name : str
        The argument's name in the error.
    what : str, default "values"
        What the sequence holds, for the error ("a sequence of {what}").

    Returns
    -------
    tuple

    Raises
    ------
    ValidationError
        Naming ``name`` where ``value`` is no such sequence.
    """
    if isinstance(value, (str, bytes, dict, set, frozenset)) or not isinstance(value, Iterable):
        raise ValidationError(name, f"expected a sequence of {what}, got {shown(value)}")
    try:
        return tuple(value)
    except TypeError:  # e.g. a 0-d array
        raise ValidationError(name, f"expected a sequence of {what}, got {shown(value)}") from None


def per_dimension(value: Any, name: str, dims: int, *, minimum: Optional[int] = None,
                  maximum: Optional[int] = U32_MAX) -> tuple:
    """One int for every dimension, or a sequence of ``dims`` ints (PyTorch's ``int or
    tuple`` arguments); a sequence of one value is repeated.

    Parameters
    ----------
    value : int or sequence of int
    name : str
        The argument's name in the error.
    dims : int
        The number of spatial dimensions.
    minimum, maximum : int, optional, keyword-only
        Inclusive bounds; defaults None (no lower bound) and ``U32_MAX`` (None: no upper
        bound).

    Returns
    -------
    tuple of int
        ``dims`` of them.

    Raises
    ------
    ValidationError
        Naming ``name`` where ``value`` is neither, of another length, or out of range.
    """
    if is_integer(value):
        return (integer(value, name, minimum=minimum, maximum=maximum),) * dims
    values = integers(value, name, minimum=minimum, maximum=maximum)
    if len(values) == 1 and dims > 1:
        return values * dims
    if len(values) != dims:
        raise ValidationError(name, f"expected one integer or {dims} of them (one per spatial dimension), "
                                    f"got {len(values)}: {shown(value)}")
    return values


def flag(value: Any, name: str) -> bool:
    """A boolean: ``False``/``True`` (NumPy's too) or ONNX's integer flags 0 and 1.  Other
    integers are errors, as ONNX Runtime treats them.

    Parameters
    ----------
    value : bool or int
    name : str
        The argument's name in the error.

    Returns
    -------
    bool

    Raises
    ------
    ValidationError
        Naming ``name`` where ``value`` is neither a bool nor 0 or 1.
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if is_integer(value) and int(value) in (0, 1):
        return bool(value)
    raise ValidationError(name, f"expected 0 or 1, got {shown(value)}")


def choice(value: Any, name: str, options: Iterable[str]) -> str:
    """One of the strings ``options``.

    Parameters
    ----------
    value : str
    name : str
        The argument's name in the error.
    options : iterable of str
        The strings allowed (case-sensitive).

    Returns
    -------
    str

    Raises
    ------
    ValidationError
        Naming ``name`` where ``value`` is not one of ``options``.
    """
    options = tuple(options)
    if not isinstance(value, str) or value not in options:
        raise ValidationError(name, f"expected one of {', '.join(repr(o) for o in options)}, got {shown(value)}")
    return value


def number(value: Any, name: str, *, minimum: Optional[float] = None, maximum: Optional[float] = None,
           positive: bool = False) -> float:
    """A finite real number (``minimum <= value <= maximum``; ``> 0`` where ``positive``)
    as a float.

    Parameters
    ----------
    value : int, float or NumPy scalar
        Not a bool.
    name : str
        The argument's name in the error.
    minimum, maximum : float, optional, keyword-only
        Inclusive bounds; default None: none.
    positive : bool, default False, keyword-only
        Require ``value > 0``.

    Returns
    -------
    float

    Raises
    ------
    ValidationError
        Naming ``name`` where ``value`` is no finite number or out of range.
    """
    want = "a finite number" + (f" >= {minimum}" if minimum is not None else "") + (" > 0" if positive else "")
    want += f" and <= {maximum}" if maximum is not None else ""
    if not is_number(value):
        raise ValidationError(name, f"expected {want}, got {shown(value)}")
    try:
        v = float(value)
    except OverflowError:  # an int beyond float's range
        raise ValidationError(name, f"expected {want}, got {shown(value)}") from None
    if not math.isfinite(v) or (minimum is not None and v < minimum) or (positive and v <= 0) \
            or (maximum is not None and v > maximum):
        raise ValidationError(name, f"expected {want}, got {shown(value)}")
    return v


#: What to convert a type DirectML lacks to (the closest type that keeps the values).
_CONVERSIONS = {"float64": "float32", "float128": "float32", "longdouble": "float32",
                "bool": "uint8", "complex64": None, "complex128": None, "object": None}
_SUPPORTED = ", ".join(t.name.lower() for t in DataType)


def _dtype_name(dtype: Any) -> str:
    """'float64' for np.dtype('float64'), torch.float64 or jnp.float64 alike."""
    if isinstance(dtype, np.dtype):
        return dtype.name
    return str(dtype).rsplit(".", 1)[-1]


def check_dtype(dtype: Any, name: str) -> None:
    """Refuse an array type DirectML lacks (a NumPy, PyTorch or JAX dtype), saying what to
    convert to: poolgpu never narrows a type silently.

    Parameters
    ----------
    dtype : numpy.dtype, torch.dtype or JAX dtype
        Read by its name (``"float64"``, ``torch.bool``, ...).
    name : str
        The argument's name in the error.

    Raises
    ------
    ValidationError
        Naming ``name`` where the type is none of poolgpu's (DirectML's ten and bfloat16; float64, bool,
        complex, object, ... are not).
    """
    type_name = _dtype_name(dtype)
    if type_name.upper() in DataType.__members__:
        return
    target = _CONVERSIONS.get(type_name)
    if target is None and type_name.startswith("float"):
        target = "float32"
    how = (f"convert it first, e.g. {name}.astype(np.{target}) (NumPy) or {name}.to(torch.{target}) (PyTorch)"
           if target else f"convert it first to one of these, e.g. {name}.astype(np.float32)")
    raise ValidationError(
        name, f"{type_name} is not a data type poolgpu supports (it takes {_SUPPORTED}); {how}. "
              "poolgpu never narrows a type silently",
    )


def array(value: Any, name: str, ranks: Optional[Iterable[int]] = (3, 4, 5), typed: bool = True,
          empty: bool = False) -> np.ndarray:
    """``value`` read as a NumPy array, without a copy where NumPy can avoid one: an ndarray
    as it is; an object with ``__array__`` or ``__dlpack__`` (a CPU torch.Tensor, a JAX
    array) read by NumPy.  Of one of ``ranks`` dimensions (None: any), every size positive
    (unless ``empty``), and where ``typed`` of a DirectML data type (float64, bool, ... are
    errors saying how to convert).

    Parameters
    ----------
    value : array-like
        An ndarray, or anything with ``__array__`` or ``__dlpack__``, or nested sequences.
    name : str
        The argument's name in the error.
    ranks : iterable of int, optional, default (3, 4, 5)
        The numbers of dimensions allowed; None: any.
    typed : bool, default True
        Require one of DirectML's data types; False: any numbers (bool, int, float).
    empty : bool, default False
        Allow sizes of 0.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    ValidationError
        Naming ``name`` where NumPy cannot read ``value``, or its type, rank or sizes are refused.
    """
    if typed and not isinstance(value, np.ndarray):
        dtype = getattr(value, "dtype", None)
        if dtype is not None and not isinstance(dtype, (str, type)):
            check_dtype(dtype, name)  # before NumPy reads it: the error names the type to convert to
    try:
        if isinstance(value, np.ndarray) or hasattr(value, "__array__") or not hasattr(value, "__dlpack__"):
            result = np.asarray(value)
        else:
            result = np.from_dlpack(value)
    except (ValueError, TypeError, RuntimeError, BufferError) as exc:
        if _dtype_name(getattr(value, "dtype", "")) == "bfloat16":
            # (torch's bfloat16 tensors: NumPy's bfloat16 is ml_dtypes', which torch does not give)
            raise ValidationError(name, f"NumPy reads bfloat16 only as ml_dtypes.bfloat16, and cannot read {shown(value)}: "
                                        "pass an ml_dtypes.bfloat16 array (a torch tensor: "
                                        f"{name}.view(torch.int16).numpy().view(ml_dtypes.bfloat16)), or use "
                                        "poolgpu.torch, which takes torch.bfloat16 tensors") from None
        raise ValidationError(name, f"expected an array NumPy can read, got {shown(value)} ({exc})") from None
    if typed:
        if result.dtype == np.float64 and isinstance(value, (list, tuple)):
            # NumPy reads Python floats as float64, which no kernel takes: say where it came from
            raise ValidationError(
                name, "a list of Python floats reads as float64, which poolgpu does not take (it never narrows a "
                      f"type silently); pass an array of the type you want, e.g. np.asarray({name}, np.float32)",
            )
        check_dtype(result.dtype, name)
    elif result.dtype.kind not in "biuf" and result.dtype.name != "bfloat16":   # (ml_dtypes' bfloat16: kind "V")
        read = "" if hasattr(value, "dtype") else f", read as dtype {result.dtype}"
        raise ValidationError(name, f"expected an array of numbers, got {shown(value)}{read}")
    if ranks is not None and result.ndim not in tuple(ranks):
        ranks = [str(r) for r in ranks]
        want = ", ".join(ranks[:-1]) + " or " + ranks[-1] if len(ranks) > 1 else ranks[0]
        layout = " {N, C, [D,] [H,] W}" if ranks == ["3", "4", "5"] else ""
        raise ValidationError(name, f"expected {want} dimensions{layout}, got shape {result.shape}")
    if 0 in result.shape and not empty:
        raise ValidationError(name, f"every size must be positive, got shape {result.shape}")
    return result

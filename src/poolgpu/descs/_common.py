"""What the descriptions share: checks of their tensors, inferred outputs and indices, the
fixed-window fields, and the average's divisor fields (forward and gradient alike)."""

from __future__ import annotations

from typing import Optional, Sequence, Tuple, Union

import numpy as np

from ..arguments import integer, integers
from ..dtypes import INDEX_TYPES, DataType
from ..errors import ValidationError
from ..shapes import Window, make_window
from ..tensor_desc import TensorDesc

__all__ = ["described"]

#: ``(role, TensorDesc or None)`` pairs, as ``input_tensors()``/``output_tensors()`` give them.
Roles = Tuple[Tuple[str, Optional[TensorDesc]], ...]


#: Docstring sections the descriptions share: a line ``$name`` (alone, indented) in a
#: description's docstring stands for the section, at that indentation; ``$name word``
#: puts ``word`` in the section's ``%s``.
_SECTIONS = {
    "window_fields": """input : TensorDesc
    {N, C, [D,] [H,] W}.
output : TensorDesc, optional
    Default None: a packed tensor of the input's type and the formula's sizes.
window_size : sequence of int
    One positive size per spatial dimension (``dimension_count`` of them).
strides : sequence of int, optional
    Positive; default None: all 1.
start_padding, end_padding : sequence of int, optional
    Non-negative; default None: all 0.""",
    "dilated": """Parameters
----------
dilations : sequence of int, optional
    Positive; default None: all 1.  The other fields are %s's.""",
    "raises_window": """Raises
------
ValidationError
    Naming the field (``window_size``, ``output.sizes``, ``input.data_type``, ...) that
    is malformed, out of range (DirectML's u32 fields; window extents and padded sizes
    at most 2^31 - 1) or inconsistent with the others; see docs/validation.md.""",
    "raises_plain": """Raises
------
ValidationError
    Naming the field that is malformed, of an unsupported type, or inconsistent with the
    others.""",
    "raises_tensors": """Raises
------
ValidationError
    Naming the field (``input_gradient.sizes``, ``indices.data_type``, ...) that is
    malformed, of an unsupported type, or inconsistent with the others.""",
}


def _with_sections(doc: str) -> str:
    """``doc`` with each ``$name`` line replaced by ``_SECTIONS[name]``, indented as the line."""
    lines = []
    for line in doc.splitlines():
        name, _, word = line.strip().partition(" ")
        if name.startswith("$"):
            indent = line[:len(line) - len(line.lstrip())]
            section = _SECTIONS[name[1:]].replace("%s", word)
            lines += [indent + part if part else part for part in section.splitlines()]
        else:
            lines.append(line)
    return "\n".join(lines) + ("\n" if doc.endswith("\n") else "")


class _Description:
    """What every operator description answers besides its fields."""

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "__doc__" in vars(cls) and cls.__doc__:
            cls.__doc__ = _with_sections(cls.__doc__)

    #: The registry key of the kernel layer's builder for this operator.
    kernel: str

    def input_tensors(self) -> Roles:
        """The tensors an op of this description takes, in call order.

        Returns
        -------
        tuple of (str, TensorDesc)
            ``(role, TensorDesc)`` pairs; the role is the field's name.
        """
        raise NotImplementedError

    def output_tensors(self) -> Roles:
        """The tensors an op of this description returns, in return order.

        Returns
        -------
        tuple of (str, TensorDesc or None)
            ``(role, TensorDesc)`` pairs; None for an optional output not asked for
            (``output_indices``).
        """
        raise NotImplementedError


class _WindowedDescription(_Description):
    """A description with a ``window_size`` field: fixed-window pooling and its gradients."""

    @property
    def dimension_count(self) -> int:
        """The number of spatial dimensions, ``len(window_size)``."""
        return len(self.window_size)


def _set(desc, **fields) -> None:
    for name, value in fields.items():
        object.__setattr__(desc, name, value)


def _check_tensor(value, field: str) -> TensorDesc:
    if not isinstance(value, TensorDesc):
        raise ValidationError(field, f"expected a TensorDesc, got {type(value).__name__}")
    return value


def described(data_type: Union[DataType, str, np.dtype, type], sizes: Sequence[int], field: str) -> TensorDesc:
    """A packed TensorDesc of ``sizes`` that poolgpu infers (an output, a function's
    ``output_sizes``), its errors about the sizes named ``field`` (e.g. ``output.sizes``):
    the field or argument the sizes come from.

    Parameters
    ----------
    data_type : DataType, NumPy dtype or str
    sizes : sequence of int
    field : str
        The field or argument the sizes come from, named in errors.

    Returns
    -------
    TensorDesc

    Raises
    ------
    ValidationError
        Naming ``field`` where the sizes make no tensor (e.g. over 2^32 - 1 elements).
    """
    try:
        return TensorDesc(data_type, sizes)
    except ValidationError as exc:
        if exc.field != "sizes":
            raise
        raise exc.renamed(field) from None


def _check_type(tensor: TensorDesc, field: str, allowed) -> None:
    if tensor.data_type not in allowed:
        names = ", ".join(t.name for t in DataType if t in allowed)
        raise ValidationError(
            f"{field}.data_type", f"{tensor.data_type.name} is not supported here; expected one of {names}"
        )


def _output_like(value, field: str, sizes: tuple, data_type: DataType) -> TensorDesc:
    """The given output (checked against the expected sizes and type) or a packed inferred one."""
    if value is None:
        return described(data_type, sizes, f"{field}.sizes")
    tensor = _check_tensor(value, field)
    if tensor.data_type != data_type:
        raise ValidationError(
            f"{field}.data_type", f"expected {data_type.name}, got {tensor.data_type.name}"
        )
    if tensor.sizes != sizes:
        raise ValidationError(f"{field}.sizes", f"expected {sizes} (from the pooling formula), got {tensor.sizes}")
    tensor.check_no_aliasing(f"{field}.strides")
    return tensor


def _indices_like(value, sizes: tuple) -> Optional[TensorDesc]:
    """output_indices: None (not computed), a TensorDesc, or a data type (a packed tensor of it)."""
    if value is None:
        return None
    if not isinstance(value, TensorDesc):
        value = described(DataType.of(value, "output_indices"), sizes, "output_indices.sizes")
    _check_type(value, "output_indices", INDEX_TYPES)
    return _output_like(value, "output_indices", sizes, value.data_type)


def _pooling_window(desc, input: TensorDesc, dilations=None) -> Window:
    """Validate the window fields of a fixed-window pooling description against its input."""
    window = make_window(desc.window_size, desc.strides, desc.start_padding, desc.end_padding, dilations)
    if window.dims != input.rank - 2:
        raise ValidationError(
            "window_size",
            f"{window.dims} spatial dimensions given, but the input {input.sizes} has {input.rank - 2} "
            f"(dimension_count must equal the input's rank - 2)",
        )
    window.check_windows_cover_input(input.sizes[2:])
    _set(
        desc,
        window_size=window.window_size,
        strides=window.strides,
        start_padding=window.start_padding,
        end_padding=window.end_padding,
    )
    return window


def _check_divisor_fields(desc, window: Window) -> None:
    """Validate and fill in the average descriptions' divisor extensions:
    ``counted_end_padding`` (None: all of ``end_padding``) and ``divisor_override``."""
    counted = desc.counted_end_padding
    if counted is None:
        counted = window.end_padding
    else:
        counted = integers(counted, "counted_end_padding", window.dims, minimum=0)
        if any(c < 0 or c > e for c, e in zip(counted, window.end_padding)):
            raise ValidationError(
                "counted_end_padding",
                f"every value must lie between 0 and the end padding {window.end_padding}, got {counted}",
            )
    override = desc.divisor_override
    if override is not None:
        override = integer(override, "divisor_override", minimum=1)
    _set(desc, counted_end_padding=counted, divisor_override=override)

"""Window geometry shared by every fixed-window pooling operator, and the output-size formula.

For each spatial dimension i: ``extent = (window_size[i] - 1) * dilations[i] + 1`` and
``out[i] = (in[i] + start_padding[i] + end_padding[i] - extent) // strides[i] + 1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from .arguments import COORDINATE_MAX, integers
from .errors import ValidationError

__all__ = ["Window", "make_window", "pooling_output_sizes", "ceil_mode_extension"]


@dataclass(frozen=True)
class Window:
    """Validated per-dimension geometry; every tuple has ``dims`` entries.  Made by
    :func:`make_window`, which validates.

    Parameters
    ----------
    window_size, strides, dilations : tuple of int
        Positive, one per spatial dimension.
    start_padding, end_padding : tuple of int
        Non-negative, one per spatial dimension.
    """

    window_size: tuple
    strides: tuple
    dilations: tuple
    start_padding: tuple
    end_padding: tuple

    @property
    def dims(self) -> int:
        """The number of spatial dimensions."""
        return len(self.window_size)

    @property
    def extents(self) -> tuple:
        """Each dimension's dilated window extent ``(window_size - 1) * dilations + 1``."""
        return tuple((k - 1) * d + 1 for k, d in zip(self.window_size, self.dilations))

    @property
    def element_count(self) -> int:
        """Positions in one window, padding included (average pooling's include_padding divisor)."""
        count = 1
        for k in self.window_size:
            count *= k
        return count

    @property
    def has_padding(self) -> bool:
        """Whether any start or end padding is non-zero."""
        return any(self.start_padding) or any(self.end_padding)

    def output_spatial_sizes(self, input_spatial: Sequence[int], field: str = "window_size") -> tuple:
        """The output's spatial sizes for an input of ``input_spatial`` sizes.

        Parameters
        ----------
        input_spatial : sequence of int
            The input's spatial sizes, ``dims`` of them.
        field : str, default "window_size"
            The field named where a window exceeds the padded input.

        Returns
        -------
        tuple of int

        Raises
        ------
        ValidationError
            Naming ``field`` where a window's extent exceeds the padded input, or the
            padding (``input.sizes`` without padding) where the padded input is larger
            than the kernels' signed 32-bit window coordinates reach.
        """
        out = []
        for i, (size, ext, s, p0, p1) in enumerate(
            zip(input_spatial, self.extents, self.strides, self.start_padding, self.end_padding)
        ):
            padded = size + p0 + p1
            if padded > COORDINATE_MAX:
                where = "end_padding" if p1 >= p0 and p1 else "start_padding" if p0 else "input.sizes"
                raise ValidationError(
                    where,
                    f"the padded input size {padded} in spatial dimension {i} (input {size} + padding {p0} + {p1}) "
                    f"exceeds {COORDINATE_MAX} (2^31 - 1), the largest window coordinate the kernels address",
                )
            if padded < ext:
                raise ValidationError(
                    field,
                    f"the window's extent {ext} in spatial dimension {i} exceeds the padded input "
                    f"size {padded} (input {size} + padding {p0} + {p1})",
                )
            out.append((padded - ext) // s + 1)
        return tuple(out)

    def check_windows_cover_input(self, input_spatial: Sequence[int]) -> None:
        """Every window must cover at least one input element (padding is never data).

        Parameters
        ----------
        input_spatial : sequence of int
            The input's spatial sizes, ``dims`` of them.

        Raises
        ------
        ValidationError
            Naming ``window_size`` where a window covers only padding (or as
            :meth:`output_spatial_sizes`).
        """
        outputs = self.output_spatial_sizes(input_spatial)
        for i, (size, k, s, d, p0, out) in enumerate(
            zip(input_spatial, self.window_size, self.strides, self.dilations, self.start_padding, outputs)
        ):
            if size >= d:
                # Consecutive taps are d <= size apart, so a window straddling the input hits it;
                # only the first and last windows can lie wholly in padding.  (Python's ints:
                # NumPy's calls cost more than two windows' arithmetic.)
                bad = [start for start in (-p0, (out - 1) * s - p0)
                       if max(0, -(start // d)) > min(k - 1, (size - 1 - start) // d)]
            else:
                starts = np.arange(out, dtype=np.int64) * s - p0
                first_tap = np.maximum(0, -(starts // d))  # ceil(-start / d), at least 0
                last_tap = np.minimum(k - 1, (size - 1 - starts) // d)
                bad = [int(start) for start in starts[first_tap > last_tap][:1]]
            if bad:
                window_start = bad[0]
                raise ValidationError(
                    "window_size",
                    f"a window in spatial dimension {i} (starting at {window_start}, size {k}, dilation {d}) "
                    f"covers only padding; every window must cover at least one input element",
                )


def make_window(
    window_size: Sequence[int],
    strides: Optional[Sequence[int]] = None,
    start_padding: Optional[Sequence[int]] = None,
    end_padding: Optional[Sequence[int]] = None,
    dilations: Optional[Sequence[int]] = None,
    dims: Optional[int] = None,
) -> Window:
    """A validated :class:`Window`: ``window_size``, ``strides`` and ``dilations`` positive,
    paddings non-negative, every value at most 2^32 - 1 (DirectML's UINT fields), the
    extents ``(window_size - 1) * dilations + 1`` at most 2^31 - 1; ``None`` fields get
    their defaults (strides and dilations 1, paddings 0).

    Parameters
    ----------
    window_size : sequence of int
        One to three positive ints.
    strides, dilations : sequence of int, optional
        Positive; default None: all 1.
    start_padding, end_padding : sequence of int, optional
        Non-negative; default None: all 0.
    dims : int, optional
        The number of spatial dimensions expected; default None: ``len(window_size)``.

    Returns
    -------
    Window

    Raises
    ------
    ValidationError
        Naming the field that is not a sequence of ``dims`` integers in range.
    """
    window_size = integers(window_size, "window_size")
    if dims is None:
        dims = len(window_size)
    if not 1 <= len(window_size) <= 3 or len(window_size) != dims:
        raise ValidationError(
            "window_size",
            f"expected {dims} values (one per spatial dimension of the input), got {len(window_size)}: {window_size}",
        )

    def per_dim(value, field, default, minimum):
        return (default,) * dims if value is None else integers(value, field, dims, minimum=minimum)

    window = Window(
        window_size=per_dim(window_size, "window_size", 1, 1),
        strides=per_dim(strides, "strides", 1, 1),
        dilations=per_dim(dilations, "dilations", 1, 1),
        start_padding=per_dim(start_padding, "start_padding", 0, 0),
        end_padding=per_dim(end_padding, "end_padding", 0, 0),
    )
    for i, (k, d, extent) in enumerate(zip(window.window_size, window.dilations, window.extents)):
        if extent > COORDINATE_MAX:
            raise ValidationError(
                "window_size" if d == 1 else "dilations",
                f"the window's extent (window_size - 1) * dilations + 1 = ({k} - 1) * {d} + 1 = {extent} in spatial "
                f"dimension {i} exceeds {COORDINATE_MAX} (2^31 - 1), the largest window coordinate the kernels address",
            )
    return window


def ceil_mode_extension(size: int, start: int, end: int, extent: int, stride: int) -> tuple:
    """ONNX's and PyTorch's ``ceil_mode`` along one dimension, as DirectML's window: the
    output size rounded up, less a last window that would start in the end padding, and the
    end padding added so that DirectML's rounding-down formula gives that size.

    Parameters
    ----------
    size : int
        The input's size.
    start, end : int
        The declared padding.
    extent : int
        The window's dilated extent.
    stride : int

    Returns
    -------
    (int, int)
        The output size, and the padding to add to ``end`` (0 where none is needed).
    """
    padded = size + start + end
    out = -(-(padded - extent) // stride) + 1  # ceil((padded - extent) / stride) + 1
    if (out - 1) * stride >= size + start:  # the last window would start in the end padding
        out -= 1
    return out, max(0, (out - 1) * stride + extent - padded)


def pooling_output_sizes(input_sizes: Sequence[int], window_size: Sequence[int],
                         strides: Optional[Sequence[int]] = None, start_padding: Optional[Sequence[int]] = None,
                         end_padding: Optional[Sequence[int]] = None,
                         dilations: Optional[Sequence[int]] = None) -> tuple:
    """Output sizes ``{N, C, spatial...}`` of a fixed-window pooling of ``input_sizes``.

    Parameters
    ----------
    input_sizes : sequence of int
        The input's sizes ``{N, C, [D,] [H,] W}`` (3, 4 or 5 positive ints).
    window_size : sequence of int
        One positive int per spatial dimension.
    strides, dilations : sequence of int, optional
        Positive; default None: all 1.
    start_padding, end_padding : sequence of int, optional
        Non-negative; default None: all 0.

    Returns
    -------
    tuple of int
        ``input_sizes[:2]`` followed by ``(in + start + end - extent) // stride + 1`` per
        spatial dimension, ``extent = (window_size - 1) * dilations + 1``.

    Raises
    ------
    ValidationError
        Naming the argument that is malformed or out of range, or ``window_size`` where a
        window's extent exceeds the padded input.
    """
    input_sizes = integers(input_sizes, "input_sizes", minimum=1)
    if not 3 <= len(input_sizes) <= 5:
        raise ValidationError("input_sizes", f"expected 3, 4 or 5 dimensions, got {len(input_sizes)}: {input_sizes}")
    window = make_window(window_size, strides, start_padding, end_padding, dilations, dims=len(input_sizes) - 2)
    return tuple(input_sizes[:2]) + window.output_spatial_sizes(input_sizes[2:])

"""Window geometry shared by every fixed-window pooling operator, and the output-size formula.

For each spatial dimension i: ``extent = (window_size[i] - 1) * dilations[i] + 1`` and
``out[i] = (in[i] + start_padding[i] + end_padding[i] - extent) // strides[i] + 1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from .arguments import int_tuple
from .errors import ValidationError


@dataclass(frozen=True)
class Window:
    """Validated per-dimension geometry; every tuple has ``dims`` entries."""

    window_size: tuple
    strides: tuple
    dilations: tuple
    start_padding: tuple
    end_padding: tuple

    @property
    def dims(self) -> int:
        return len(self.window_size)

    @property
    def extents(self) -> tuple:
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
        return any(self.start_padding) or any(self.end_padding)

    def output_spatial_sizes(self, input_spatial: Sequence[int], field: str = "window_size") -> tuple:
        out = []
        for i, (size, ext, s, p0, p1) in enumerate(
            zip(input_spatial, self.extents, self.strides, self.start_padding, self.end_padding)
        ):
            padded = size + p0 + p1
            if padded < ext:
                raise ValidationError(
                    field,
                    f"the window's extent {ext} in spatial dimension {i} exceeds the padded input "
                    f"size {padded} (input {size} + padding {p0} + {p1})",
                )
            out.append((padded - ext) // s + 1)
        return tuple(out)

    def check_windows_cover_input(self, input_spatial: Sequence[int]) -> None:
        """Every window must cover at least one input element (padding is never data)."""
        outputs = self.output_spatial_sizes(input_spatial)
        for i, (size, k, s, d, p0, out) in enumerate(
            zip(input_spatial, self.window_size, self.strides, self.dilations, self.start_padding, outputs)
        ):
            if size >= d:
                # Consecutive taps are d <= size apart, so a window straddling the input hits it;
                # only the first and last windows can lie wholly in padding.
                starts = np.array([-p0, (out - 1) * s - p0], dtype=np.int64)
            else:
                starts = np.arange(out, dtype=np.int64) * s - p0
            first_tap = np.maximum(0, -(starts // d))  # ceil(-start / d), at least 0
            last_tap = np.minimum(k - 1, (size - 1 - starts) // d)
            bad = np.nonzero(first_tap > last_tap)[0]
            if bad.size:
                window_start = int(starts[bad[0]])
                raise ValidationError(
                    "window_size",
                    f"a window in spatial dimension {i} (starting at {window_start}, size {k}, dilation {d}) "
                    f"covers only padding; every window must cover at least one input element",
                )


def make_window(
    window_size,
    strides=None,
    start_padding=None,
    end_padding=None,
    dilations=None,
    dims: Optional[int] = None,
) -> Window:
    window_size = int_tuple(window_size, "window_size")
    if dims is None:
        dims = len(window_size)
    if not 1 <= len(window_size) <= 3 or len(window_size) != dims:
        raise ValidationError(
            "window_size",
            f"expected {dims} values (one per spatial dimension of the input), got {len(window_size)}: {window_size}",
        )

    def per_dim(value, field, default, minimum):
        values = (default,) * dims if value is None else int_tuple(value, field, dims)
        if any(v < minimum for v in values):
            what = "positive" if minimum == 1 else "non-negative"
            raise ValidationError(field, f"every value must be {what}, got {values}")
        return values

    window_size = per_dim(window_size, "window_size", 1, 1)
    return Window(
        window_size=window_size,
        strides=per_dim(strides, "strides", 1, 1),
        dilations=per_dim(dilations, "dilations", 1, 1),
        start_padding=per_dim(start_padding, "start_padding", 0, 0),
        end_padding=per_dim(end_padding, "end_padding", 0, 0),
    )


def pooling_output_sizes(input_sizes, window_size, strides=None, start_padding=None, end_padding=None, dilations=None) -> tuple:
    """Output sizes ``{N, C, spatial...}`` of a fixed-window pooling of ``input_sizes``."""
    input_sizes = int_tuple(input_sizes, "input_sizes")
    if not 3 <= len(input_sizes) <= 5:
        raise ValidationError("input_sizes", f"expected 3, 4 or 5 dimensions, got {len(input_sizes)}: {input_sizes}")
    window = make_window(window_size, strides, start_padding, end_padding, dilations, dims=len(input_sizes) - 2)
    return tuple(input_sizes[:2]) + window.output_spatial_sizes(input_sizes[2:])

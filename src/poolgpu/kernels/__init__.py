"""The kernel layer: a description (and a tuning) -> the Program of passes that computes it.

- :mod:`.core`: the model (Program, Pass, Kernel, Slot, Split, View) and shader assembly;
- :mod:`.grids`: tensor geometry, workgroup grids and layout predicates;
- :mod:`.chunking`: programs over tensors larger than a storage binding;
- one module per operator family, each registering its builders (:mod:`.registry`):
  :mod:`.window` (forward window walks), :mod:`.binned` (ROI and adaptive pooling, and
  their gradients), :mod:`.fractional` (fractional max pooling and its gradient),
  :mod:`.gradients` (the fixed-window gradients), :mod:`.unpooling` (max unpooling and its
  gradient), :mod:`.roi_align` (ROI align and its gradient), :mod:`.quantized` (quantized
  average pooling, and integer adaptive average pooling); :mod:`.planes` holds the gradients
  of global pooling that the gradients' and the adaptive builders take over planes of any
  size.
"""

from . import binned, fractional, gradients, planes, quantized, roi_align, unpooling, window  # noqa: F401  (builders)
from .chunking import chunked, max_offset, plane_count, plane_span
from .core import Kernel, Pass, Program, Slot, Split, View, pack_params, read_wgsl, shader_source
from .grids import divisor_params
from .registry import REGISTRY, program_for, register

__all__ = [
    "Kernel", "Pass", "Program", "Slot", "Split", "View", "REGISTRY", "program_for", "register", "chunked",
    "max_offset", "plane_count", "plane_span", "pack_params", "read_wgsl", "shader_source",
    "divisor_params", "all_kernels",
]


def all_kernels() -> list:
    """Every Kernel the operator families declare (for checks over all shaders)."""
    found = []
    for module in (window, binned, fractional, gradients, planes, unpooling, roi_align, quantized):
        for value in vars(module).values():
            values = value.values() if isinstance(value, dict) else value if isinstance(value, tuple) else (value,)
            found += [k for k in values if isinstance(k, Kernel) and k not in found]
    return found

"""Operator descriptions: frozen dataclasses named after DirectML's structs.

Each description validates itself when it is made (raising ValidationError naming the
field) and fills in what was left out: per-dimension defaults and inferred output tensors.
A made description is therefore always valid, and the kernel layer reads it without
re-checking.  Besides its public fields every description answers:

- ``kernel``: the registry key of the shader variant that computes it;
- ``input_tensors()`` / ``output_tensors()``: ``(role, TensorDesc or None)`` pairs in call
  and return order (None for an optional output that was not asked for);
- ``window``: the validated :class:`~poolgpu.shapes.Window` (fixed-window operators).
"""

from typing import Union

from ._common import described
from ._made import made
from .binned import AdaptiveAveragePoolingDesc, AdaptiveMaxPoolingDesc, RoiPoolingDesc
from .fractional import FractionalMaxPoolingDesc, FractionalMaxPoolingGradDesc
from .gradients import (AdaptiveAveragePoolingGradDesc, AdaptiveMaxPoolingGradDesc, AveragePoolingGradDesc,
                        LpPoolingGradDesc, MaxPoolingGradDesc, MaxUnpoolingDesc, MaxUnpoolingGradDesc,
                        RoiPoolingGradDesc)
from .roi_align import RoiAlign1Desc, RoiAlignDesc, RoiAlignGradDesc
from .pooling import (AveragePooling1Desc, AveragePoolingDesc, LpPooling1Desc, LpPoolingDesc, MaxPooling1Desc,
                      MaxPooling2Desc, MaxPoolingDesc)
from .quantized import QuantizedLinearAveragePoolingDesc

#: Any operator description: what ``Device.compile`` takes (for annotations).
Description = Union[
    MaxPoolingDesc, MaxPooling1Desc, MaxPooling2Desc, AveragePoolingDesc, AveragePooling1Desc, LpPoolingDesc,
    LpPooling1Desc, RoiPoolingDesc, AdaptiveMaxPoolingDesc, AdaptiveAveragePoolingDesc, MaxPoolingGradDesc,
    AveragePoolingGradDesc, MaxUnpoolingDesc, AdaptiveMaxPoolingGradDesc, AdaptiveAveragePoolingGradDesc,
    MaxUnpoolingGradDesc, FractionalMaxPoolingDesc, FractionalMaxPoolingGradDesc, LpPoolingGradDesc,
    RoiPoolingGradDesc, QuantizedLinearAveragePoolingDesc,
]
Description = Union[Description, RoiAlignDesc, RoiAlign1Desc, RoiAlignGradDesc]

__all__ = [
    "MaxPoolingDesc", "MaxPooling1Desc", "MaxPooling2Desc", "AveragePoolingDesc", "AveragePooling1Desc",
    "LpPoolingDesc", "LpPooling1Desc", "RoiPoolingDesc", "AdaptiveMaxPoolingDesc", "AdaptiveAveragePoolingDesc",
    "MaxPoolingGradDesc", "AveragePoolingGradDesc", "MaxUnpoolingDesc", "AdaptiveMaxPoolingGradDesc",
    "AdaptiveAveragePoolingGradDesc", "MaxUnpoolingGradDesc", "FractionalMaxPoolingDesc",
    "FractionalMaxPoolingGradDesc", "LpPoolingGradDesc", "RoiPoolingGradDesc", "Description", "described",
    "QuantizedLinearAveragePoolingDesc",
]
__all__ += ["RoiAlignDesc", "RoiAlign1Desc", "RoiAlignGradDesc"]

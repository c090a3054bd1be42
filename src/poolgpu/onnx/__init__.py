"""ONNX's pooling operators with ONNX's attributes and rules, on poolgpu's operators.

Each function takes the ONNX operator's inputs and attributes (keyword names as in the ONNX
specification) and returns what the operator returns: NumPy arrays for NumPy inputs,
Tensors for Tensors.  What ONNX adds to DirectML's descriptions is translated here:

- ``pads`` in ONNX order (all begins, then all ends) and ``auto_pad`` (NOTSET, VALID,
  SAME_UPPER, SAME_LOWER: output ``ceil(in / stride)``, the odd padding element at the
  end for SAME_UPPER and at the beginning for SAME_LOWER);
- ``ceil_mode``: the output size is rounded up, but a last window that would start in the
  end padding is dropped; the extra end padding this needs is padding like any other for
  max and Lp pooling, and is left out of AveragePool's ``count_include_pad`` divisor (as
  ONNX's reference and PyTorch do);
- ``storage_order = 1``: column-major indices, computed by pooling a spatially transposed
  view of the same memory (no copy);
- indices as int64;
- MaxUnpool's ``output_shape``: the output's shape, in which the indices are flat
  positions, as ONNX Runtime and PyTorch read them (MaxPool's indices of an odd-sized input
  unpool back to where they came from).  ONNX's reference evaluator, and its node test
  ``test_maxunpool_export_with_output_shape``, instead unpool into the inferred shape and
  pad the result at the ends, which moves values of odd-sized inputs and drops some
  (onnx/onnx#2398, microsoft/onnxruntime#2193): the one ONNX node test poolgpu answers
  differently, on purpose.

MaxUnpool without ``output_shape`` refuses indices outside the inferred output (as ONNX
Runtime does), saying to pass ``output_shape``.

ONNX Runtime's quantized average pooling (domain ``com.microsoft``): ``qlinear_average_pool``
and ``qlinear_global_average_pool`` give ONNX Runtime's results bit for bit, its two
arithmetics included (a window covering whole planes without padding goes through its
global average's integer sums; any other sums dequantized taps in float32 and adds the zero
point before rounding), ``channels_last`` inputs and outputs, and its refusals (scales and
zero points per tensor only; the global average's limits).  String attributes (``auto_pad``) may be
``str`` or ``bytes``, as ``onnx.helper.get_attribute_value`` gives them.

Whole nodes and models: :func:`run_node` runs one ``onnx.NodeProto`` of any pooling op type
with its attributes, the opset's defaults and its optional inputs and outputs; :data:`OPS`
holds op classes for ``onnx.reference.ReferenceEvaluator(model, new_ops=pgo.OPS)``, so that a
whole model runs with its pooling on poolgpu.  Only these two import the onnx package, when
they are used: ``import poolgpu.onnx`` and the functions do not need it.

Every function also takes ``device=`` (default: the inputs' device, or the default device
for NumPy inputs).  Attributes are checked before any GPU work: a wrong one raises
:class:`~poolgpu.ValidationError` naming the ONNX attribute (``kernel_shape``, ``pads``,
``ceil_mode``, ...); integer flags other than 0 and 1 are errors, as in ONNX Runtime.
"""
# (no `from __future__ import annotations` here: the package's namespace holds only its names)
from ._nodes import Ops as _Ops
from ._nodes import run_node
from ._operators import (average_pool, global_average_pool, global_lp_pool, global_max_pool, lp_pool, max_pool,
                         max_roi_pool, max_unpool)
from ._quantized import qlinear_average_pool, qlinear_global_average_pool
from ._roi_align import roi_align

#: The onnx.reference op classes (``MaxPool``, ``AveragePool``, ... ``MaxRoiPool``, ``RoiAlign``, and
#: com.microsoft's ``QLinearAveragePool``, ``QLinearGlobalAveragePool``) running on poolgpu,
#: for ``onnx.reference.ReferenceEvaluator(model, new_ops=OPS)``: a sequence, made
#: (importing onnx) on first use.
OPS = _Ops()

__all__ = ["max_pool", "average_pool", "lp_pool", "global_max_pool", "global_average_pool", "global_lp_pool",
           "max_unpool", "max_roi_pool", "roi_align", "run_node", "OPS",
           "qlinear_average_pool", "qlinear_global_average_pool"]

"""PyTorch's pooling functions on poolgpu: ``import poolgpu.torch as pgt``.

The names, argument order, defaults, rules and results of ``torch.nn.functional``'s
pooling functions (and of ``torchvision.ops.roi_pool``), so that porting is changing an
import: ``F.max_pool2d(x, 3, 2, 1)`` becomes ``pgt.max_pool2d(x, 3, 2, 1)``.

- What comes in goes out: a ``torch.Tensor`` gives ``torch.Tensor``s of its dtype (one on
  another torch device, e.g. CUDA, is read through the CPU and its results are put back on
  that device), a NumPy array NumPy arrays, a ``pg.Tensor`` ``pg.Tensor``s.
- Types: float32, float16 and bfloat16; the max family and unpooling also int8, uint8,
  int16, int32 and int64.  Others are a ValidationError saying what to convert to.
- Indices are int64 positions within each (n, c) plane, as PyTorch's.  poolgpu's kernels
  index the whole tensor; the conversion is done on the host (one pass over the indices).
- Autograd: where the input requires grad, the max, average, adaptive and unpooling
  functions are differentiable through poolgpu's deterministic gradient kernels, Lp, ROI
  and fractional pooling included.
- PyTorch's graph tools: each function is a custom operator, ``torch.ops.poolgpu.<name>``
  (``max_pool2d_with_indices`` and ``adaptive_max_pool2d_with_indices`` where indices are
  returned), with a fake implementation and its autograd formula, so that
  ``torch.compile(fullgraph=True)``, ``torch.export``, ``torch.jit.trace``, meta tensors,
  ``torch.func.grad`` and ``torch.func.vmap`` work.
- Modules: :mod:`poolgpu.torch.nn` has torch.nn's pooling modules; :func:`convert` puts
  them into a model in place of torch's (saying what it left), :func:`unconvert` puts
  torch's back; inside ``with functional():`` torch.nn.functional's pooling calls run on
  poolgpu, in any code.
- ``torch.onnx.export`` (either exporter) writes ONNX's pooling nodes for these functions
  and modules (torch's own functions are recorded in their place): the exported model
  runs without poolgpu.
- Arguments as PyTorch takes them (bools only ``True``/``False``; sizes ints, NumPy ints or
  tuples and lists of them).  Invalid arguments raise ``pg.ValidationError`` naming the
  PyTorch argument, where PyTorch raises; values PyTorch takes without a meaning (a
  negative stride or padding in ``max_unpool*``, a tuple longer than it reads) and values
  beyond poolgpu's kernels (``norm_type`` above 64) are refused too.

This is the one poolgpu package that imports torch; ``import poolgpu`` does not.
"""

from .fractional import fractional_max_pool2d, fractional_max_pool3d
from .adaptive import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, adaptive_max_pool1d,
                       adaptive_max_pool2d, adaptive_max_pool3d)
from .pooling import (avg_pool1d, avg_pool2d, avg_pool3d, lp_pool1d, lp_pool2d, lp_pool3d, max_pool1d, max_pool2d,
                      max_pool3d)
from .roi import roi_pool
from .roi_align import ps_roi_align, roi_align
from .ps_roi_pool import ps_roi_pool
from .unpool import max_unpool1d, max_unpool2d, max_unpool3d
from . import nn
from ._functional_mode import functional
from .nn import convert, unconvert

__all__ = [
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "lp_pool1d", "lp_pool2d", "lp_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
    "max_unpool1d", "max_unpool2d", "max_unpool3d", "roi_pool", "fractional_max_pool2d", "fractional_max_pool3d",
    "convert", "unconvert", "functional",
]
__all__ += ["roi_align", "ps_roi_align", "ps_roi_pool"]

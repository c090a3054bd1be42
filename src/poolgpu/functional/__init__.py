"""The functional API: NumPy arrays in, NumPy arrays out; Tensors in, Tensors out.

Anything else NumPy reads without going through Python objects (``__array__`` or
``__dlpack__``: a CPU ``torch.Tensor``, a JAX array) is read as a NumPy array.  A type
poolgpu lacks (float64, bool, complex, object) is refused with a ValidationError that says
what to convert to: poolgpu never narrows a type silently.  bfloat16 arrays are
``ml_dtypes.bfloat16``'s.
"""

from ._common import ArrayLike, Result, Window
from ._gradients import (adaptive_average_pool_grad, adaptive_max_pool_grad, average_pool_grad,
                         fractional_max_pool_grad, lp_pool_grad, max_pool_grad, max_unpool_grad, roi_pool_grad)
from ._pooling import (adaptive_average_pool, adaptive_max_pool, average_pool, fractional_max_pool, lp_pool,
                       max_pool, max_unpool, roi_pool)
from ._quantized import Scale, ZeroPoint, quantized_average_pool

__all__ = [
    "max_pool", "average_pool", "lp_pool", "roi_pool", "adaptive_max_pool", "adaptive_average_pool",
    "max_pool_grad", "average_pool_grad", "max_unpool", "adaptive_max_pool_grad", "adaptive_average_pool_grad",
    "max_unpool_grad", "fractional_max_pool", "lp_pool_grad", "roi_pool_grad", "fractional_max_pool_grad",
    "quantized_average_pool",
    "ArrayLike", "Result", "Window", "Scale", "ZeroPoint",
]
from ._roi_align import roi_align, roi_align_grad  # noqa: E402
__all__ += ["roi_align", "roi_align_grad"]

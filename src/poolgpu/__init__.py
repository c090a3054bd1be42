"""poolgpu: exact, fast pooling as WGSL compute shaders on any GPU wgpu-py reaches.

Its public names; nothing here touches a GPU until a Device is made.
"""

from . import onnx
from .descs import (AdaptiveAveragePoolingDesc, AdaptiveMaxPoolingDesc, AveragePooling1Desc, AveragePoolingDesc,
                    LpPooling1Desc, LpPoolingDesc, MaxPooling1Desc, MaxPooling2Desc, MaxPoolingDesc, RoiPoolingDesc)
from .descs import AveragePoolingGradDesc, MaxPoolingGradDesc, MaxUnpoolingDesc
from .descs import AdaptiveAveragePoolingGradDesc, AdaptiveMaxPoolingGradDesc, MaxUnpoolingGradDesc
from .descs import FractionalMaxPoolingDesc, FractionalMaxPoolingGradDesc, LpPoolingGradDesc, RoiPoolingGradDesc
from .descs import RoiAlign1Desc, RoiAlignDesc, RoiAlignGradDesc
from .descs import QuantizedLinearAveragePoolingDesc
from .adapters import list_adapters
from .bundle import export
from .device import Device, default_device
from .ops import Op
from .tensor import Tensor
from .dtypes import DataType
from .errors import DeviceError, ValidationError
from .functional import adaptive_average_pool, adaptive_max_pool, average_pool, lp_pool, max_pool, roi_pool
from .functional import average_pool_grad, max_pool_grad, max_unpool
from .functional import adaptive_average_pool_grad, adaptive_max_pool_grad, max_unpool_grad
from .functional import fractional_max_pool, fractional_max_pool_grad, lp_pool_grad, roi_pool_grad
from .functional import roi_align, roi_align_grad
from .functional import quantized_average_pool
from .shapes import pooling_output_sizes
from .tensor_desc import TensorDesc
from .tuning import Tuning

__version__ = "0.1.0"

__all__ = [
    "DataType", "TensorDesc", "ValidationError", "DeviceError",
    "MaxPoolingDesc", "MaxPooling1Desc", "MaxPooling2Desc",
    "AveragePoolingDesc", "AveragePooling1Desc", "LpPoolingDesc", "LpPooling1Desc",
    "RoiPoolingDesc", "AdaptiveMaxPoolingDesc", "AdaptiveAveragePoolingDesc",
    "MaxPoolingGradDesc", "AveragePoolingGradDesc", "MaxUnpoolingDesc",
    "AdaptiveMaxPoolingGradDesc", "AdaptiveAveragePoolingGradDesc", "MaxUnpoolingGradDesc",
    "FractionalMaxPoolingDesc", "FractionalMaxPoolingGradDesc", "LpPoolingGradDesc", "RoiPoolingGradDesc",
    "QuantizedLinearAveragePoolingDesc",
    "pooling_output_sizes",
    "Device", "Tensor", "Op", "Tuning", "list_adapters", "default_device", "export",
    "max_pool", "average_pool", "lp_pool",
    "roi_pool", "adaptive_max_pool", "adaptive_average_pool",
    "max_pool_grad", "average_pool_grad", "max_unpool",
    "adaptive_max_pool_grad", "adaptive_average_pool_grad", "max_unpool_grad",
    "fractional_max_pool", "lp_pool_grad", "roi_pool_grad", "fractional_max_pool_grad",
    "quantized_average_pool",
    "onnx",
]
__all__ += ["RoiAlignDesc", "RoiAlign1Desc", "RoiAlignGradDesc", "roi_align", "roi_align_grad"]

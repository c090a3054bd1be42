"""torchvision.ops' ROI modules on poolgpu: ``RoIAlign``, ``RoIPool``, ``PSRoIAlign``,
``PSRoIPool`` and ``MultiScaleRoIAlign`` with torchvision's constructors, attributes and ``repr``, and the table
:func:`poolgpu.torch.convert` uses to put them in place of torchvision's.  torchvision is not
imported: where it is installed and imported, its classes are swapped by name."""

from __future__ import annotations

import math
import sys
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch

from ..device import Device
from ._call import checked_device
from .ps_roi_pool import ps_roi_pool
from .roi import roi_pool
from .roi_align import ps_roi_align, roi_align

__all__ = ["RoIAlign", "RoIPool", "PSRoIAlign", "PSRoIPool", "MultiScaleRoIAlign", "torchvision_swaps", "swapped"]


class _Roi(torch.nn.Module):
    """``device``, as poolgpu.torch.nn's pooling modules have it."""

    def __init__(self, *, device: Optional[Device] = None) -> None:
        super().__init__()
        self.device = device

    @property
    def device(self) -> Optional[Device]:
        """The pg.Device the module computes on; None: ``pg.default_device()``."""
        return self._poolgpu_device

    @device.setter
    def device(self, device: Optional[Device]) -> None:
        self._poolgpu_device = checked_device(device, type(self).__name__)


class RoIAlign(_Roi):
    """``torchvision.ops.RoIAlign`` on poolgpu (:func:`poolgpu.torch.roi_align`).

    Parameters
    ----------
    output_size : int or tuple of int
    spatial_scale : float
    sampling_ratio : int
    aligned : bool, default False
    device : pg.Device, optional, keyword-only
    """

    def __init__(self, output_size: Union[int, Tuple[int, int]], spatial_scale: float, sampling_ratio: int,
                 aligned: bool = False, *,
                 device: Optional[Device] = None) -> None:
        super().__init__(device=device)
        self.output_size, self.spatial_scale = output_size, spatial_scale
        self.sampling_ratio, self.aligned = sampling_ratio, aligned

    def forward(self, input: torch.Tensor, rois: Union[torch.Tensor, List[torch.Tensor]]) -> torch.Tensor:
        """ROI align of ``input`` over ``rois`` ((K, 5) or a list of (L, 4)), as torchvision's.

        Parameters
        ----------
        input : torch.Tensor
            (N, C, H, W).
        rois : torch.Tensor or list of torch.Tensor
            (K, 5) ``[batch, x1, y1, x2, y2]``, or (L, 4) boxes per image.

        Returns
        -------
        torch.Tensor
        """
        return roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio, self.aligned,
                         device=self.device)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale}, "
                f"sampling_ratio={self.sampling_ratio}, aligned={self.aligned})")


class _RoiPooling(_Roi):
    """torchvision's ROI pooling modules' constructor and ``repr``: ``output_size`` and
    ``spatial_scale``; ``_function`` pools."""

    def __init__(self, output_size: Union[int, Tuple[int, int]], spatial_scale: float, *,
                 device: Optional[Device] = None) -> None:
        super().__init__(device=device)
        self.output_size, self.spatial_scale = output_size, spatial_scale

    def forward(self, input: torch.Tensor, rois: Union[torch.Tensor, List[torch.Tensor]]) -> torch.Tensor:
        """The pooling of ``input`` over ``rois``, as torchvision's.

        Parameters
        ----------
        input : torch.Tensor
            (N, C, H, W).
        rois : torch.Tensor or list of torch.Tensor
            (K, 5) ``[batch, x1, y1, x2, y2]``, or (L, 4) boxes per image.

        Returns
        -------
        torch.Tensor
        """
        return type(self)._function(input, rois, self.output_size, self.spatial_scale, device=self.device)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale})"


class RoIPool(_RoiPooling):
    """``torchvision.ops.RoIPool`` on poolgpu (:func:`poolgpu.torch.roi_pool`): ROI max pooling.

    Parameters
    ----------
    output_size : int or tuple of int
    spatial_scale : float
    device : pg.Device, optional, keyword-only
    """

    _function = roi_pool


class PSRoIPool(_RoiPooling):
    """``torchvision.ops.PSRoIPool`` on poolgpu (:func:`poolgpu.torch.ps_roi_pool`):
    position-sensitive ROI (average) pooling.

    Parameters
    ----------
    output_size : int or tuple of int
    spatial_scale : float
    device : pg.Device, optional, keyword-only
    """

    _function = ps_roi_pool


class PSRoIAlign(_Roi):
    """``torchvision.ops.PSRoIAlign`` on poolgpu (:func:`poolgpu.torch.ps_roi_align`).

    Parameters
    ----------
    output_size : int or tuple of int
    spatial_scale : float
    sampling_ratio : int
    device : pg.Device, optional, keyword-only
    """

    def __init__(self, output_size: Union[int, Tuple[int, int]], spatial_scale: float, sampling_ratio: int, *,
                 device: Optional[Device] = None) -> None:
        super().__init__(device=device)
        self.output_size, self.spatial_scale, self.sampling_ratio = output_size, spatial_scale, sampling_ratio

    def forward(self, input: torch.Tensor, rois: Union[torch.Tensor, List[torch.Tensor]]) -> torch.Tensor:
        """Position-sensitive ROI align of ``input`` over ``rois``, as torchvision's.

        Parameters
        ----------
        input : torch.Tensor
            (N, C, H, W).
        rois : torch.Tensor or list of torch.Tensor
            (K, 5) ``[batch, x1, y1, x2, y2]``, or (L, 4) boxes per image.

        Returns
        -------
        torch.Tensor
        """
        return ps_roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio,
                            device=self.device)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale}, "
                f"sampling_ratio={self.sampling_ratio})")


def _infer_scale(feature: torch.Tensor, original_size: Sequence[int]) -> float:
    # torchvision's: the scale is 2 ** -k, k an integer, from the height
    return 2 ** float(torch.tensor(float(feature.shape[-2]) / float(original_size[0])).log2().round())


class MultiScaleRoIAlign(_Roi):
    """``torchvision.ops.MultiScaleRoIAlign`` on poolgpu: each box pooled (ROI align) from the
    feature map of its FPN level, ``floor(canonical_level + log2(sqrt(area) /
    canonical_scale) + 1e-6)`` clamped to the maps' levels, as torchvision's.

    Parameters
    ----------
    featmap_names : list of str
    output_size : int or tuple of int
    sampling_ratio : int
    canonical_scale : int, default 224, keyword-only
    canonical_level : int, default 4, keyword-only
    device : pg.Device, optional, keyword-only
    """

    def __init__(self, featmap_names: List[str], output_size: Union[int, Tuple[int, int], List[int]],
                 sampling_ratio: int, *, canonical_scale: int = 224, canonical_level: int = 4,
                 device: Optional[Device] = None) -> None:
        super().__init__(device=device)
        if isinstance(output_size, int):
            output_size = (output_size, output_size)
        self.featmap_names = featmap_names
        self.sampling_ratio = sampling_ratio
        self.output_size = tuple(output_size)
        self.canonical_scale = canonical_scale
        self.canonical_level = canonical_level
        self.scales: Optional[List[float]] = None
        self.map_levels = None

    def _levels(self, boxes: List[torch.Tensor], scales: List[float]) -> torch.Tensor:
        k_min = int(-torch.log2(torch.tensor(scales[0], dtype=torch.float32)).item())
        k_max = int(-torch.log2(torch.tensor(scales[-1], dtype=torch.float32)).item())
        s = torch.sqrt(torch.cat([(b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]) for b in boxes]))
        levels = torch.floor(self.canonical_level + torch.log2(s / self.canonical_scale)
                             + torch.tensor(1e-6, dtype=s.dtype))
        return torch.clamp(levels, min=k_min, max=k_max).to(torch.int64) - k_min

    def forward(self, x: Dict[str, torch.Tensor], boxes: List[torch.Tensor],
                image_shapes: List[Tuple[int, int]]) -> torch.Tensor:
        """The pooled boxes, (K, C, h, w), as torchvision's module gives them.

        Parameters
        ----------
        x : dict of str to torch.Tensor
            The feature maps, by name (those of ``featmap_names`` are used, in order).
        boxes : list of torch.Tensor
            (L, 4) boxes per image, in the image's coordinates.
        image_shapes : list of (int, int)
            The images' (height, width) before the network.

        Returns
        -------
        torch.Tensor
        """
        features = [v for k, v in x.items() if k in self.featmap_names]
        original = (max(s[0] for s in image_shapes), max(s[1] for s in image_shapes))
        scales = [_infer_scale(f, original) for f in features]
        self.scales = scales
        rois = torch.cat([torch.cat([torch.full_like(b[:, :1], i), b], dim=1) for i, b in enumerate(boxes)])
        if len(features) == 1:
            return roi_align(features[0], rois, self.output_size, scales[0], self.sampling_ratio, device=self.device)
        levels = self._levels(boxes, scales)
        result = features[0].new_zeros((len(rois), features[0].shape[1]) + self.output_size)
        for level, (feature, scale) in enumerate(zip(features, scales)):
            index = torch.nonzero(levels == level).squeeze(1)
            pooled = roi_align(feature, rois[index], self.output_size, scale, self.sampling_ratio, device=self.device)
            result = result.index_put((index,), pooled)
        return result

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(featmap_names={self.featmap_names}, output_size={self.output_size}, "
                f"sampling_ratio={self.sampling_ratio})")


def torchvision_swaps() -> Dict[type, type]:
    """torchvision's ROI module classes -> poolgpu's, where torchvision has been imported
    (poolgpu never imports it: a model holding its modules has)."""
    ops = sys.modules.get("torchvision.ops")
    if ops is None:
        return {}
    names = ("RoIAlign", "RoIPool", "PSRoIAlign", "PSRoIPool", "MultiScaleRoIAlign")
    return {getattr(ops, n): globals()[n] for n in names if hasattr(ops, n)}


def swapped(module: torch.nn.Module, cls: type, device: Optional[Device]) -> torch.nn.Module:
    """poolgpu's ``cls`` holding torchvision's ``module``'s attributes (and hooks)."""
    new = cls.__new__(cls)
    new.__dict__.update(vars(module))
    if isinstance(new, MultiScaleRoIAlign):
        new.canonical_scale = getattr(module, "canonical_scale", 224)
        new.canonical_level = getattr(module, "canonical_level", 4)
    new.device = device
    return new

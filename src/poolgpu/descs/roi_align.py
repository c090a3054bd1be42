"""ROI align (DirectML's ROI_ALIGN, ROI_ALIGN1 and ROI_ALIGN_GRAD): each output samples its
bin of a region of interest, bilinearly or at the nearest element, and averages or takes
the maximum of the samples.  The semantics are docs/semantics.md's ("ROI align")."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Optional

import numpy as np

from ..arguments import U32_MAX, choice, flag, integer, integers, is_integer, number, sequence, shown
from ..dtypes import FLOAT_TYPES, DataType
from ..errors import ValidationError
from ..tensor_desc import TensorDesc
from ._common import Roles, _Description, _check_tensor, _check_type, _output_like, _set

__all__ = ["RoiAlignDesc", "RoiAlign1Desc", "RoiAlignGradDesc", "ROI_BATCH_TYPES", "f32_number"]

#: The types of ``batch_indices`` (DirectML takes UINT32 and UINT64; the signed types are
#: read as ONNX's int64 indices are: a negative one is outside the input).
ROI_BATCH_TYPES = frozenset({DataType.UINT32, DataType.INT32, DataType.UINT64, DataType.INT64})
REDUCTIONS = ("average", "max")
INTERPOLATIONS = ("nearest_neighbor", "linear")


def f32_number(value, name: str) -> float:
    """A finite number that stays finite in float32 (the kernels compute in float32), as the
    float32 value they use."""
    v = number(value, name)
    with np.errstate(over="ignore"):
        as_f32 = np.float32(v)
    if not np.isfinite(as_f32):
        raise ValidationError(name, f"expected a number finite in float32 (the kernels compute in float32), "
                                    f"got {shown(value)}")
    return float(as_f32)


def _rois(value, input: TensorDesc) -> int:
    """Check ``roi`` ({1, R, 4} or {1, 1, R, 4} of the input's type); its R."""
    roi = _check_tensor(value, "roi")
    if roi.data_type != input.data_type:
        raise ValidationError("roi.data_type", f"expected the input's type {input.data_type.name}, "
                                               f"got {roi.data_type.name}")
    sizes = roi.sizes
    if sizes[-1] != 4 or any(s != 1 for s in sizes[:-2]) or len(sizes) > 4:
        raise ValidationError("roi.sizes", f"expected {{1, R, 4}} or {{1, 1, R, 4}} (one [x1, y1, x2, y2] per ROI; "
                                           f"the functions take (R, 4) arrays), got {sizes}")
    return sizes[-2]


def _batch_indices(value, rois: int) -> TensorDesc:
    tensor = _check_tensor(value, "batch_indices")
    _check_type(tensor, "batch_indices", ROI_BATCH_TYPES)
    if tensor.sizes[-1] != rois or any(s != 1 for s in tensor.sizes[:-1]):
        raise ValidationError("batch_indices.sizes", f"expected {{1, 1, R}} or {{1, 1, 1, R}} with the ROIs' R = "
                                                     f"{rois}, got {tensor.sizes}")
    return tensor


def _output_size(desc, field_output: str, rois: int, input: TensorDesc) -> tuple:
    """The output's (height, width): ``output_size`` (one int: both), or the given output's."""
    size = desc.output_size
    given = getattr(desc, field_output)
    if size is None:
        if given is None:
            raise ValidationError("output_size", "give the output's (height, width), or an output tensor")
        tensor = _check_tensor(given, field_output)
        if len(tensor.sizes) != 4:
            raise ValidationError(f"{field_output}.sizes", f"expected {{R, C, height, width}}, got {tensor.sizes}")
        size = tensor.sizes[2:]
    elif is_integer(size):
        size = (size, size)
    return integers(size, "output_size", 2, minimum=1)


def _check_table(rois: int, output_size: tuple) -> None:
    """The kernels tabulate each ROI: 7 + 4 * (height + width) u32 words."""
    words = rois * (7 + 4 * sum(output_size))
    if words > U32_MAX:
        raise ValidationError("output_size", f"{output_size} for {rois} ROIs needs a table of {words} words; at most "
                                             f"2^32 - 1 (ROIs * (7 + 4 * (height + width)))")


def _sampling(desc) -> dict:
    """The sampling fields shared by the three descriptions, checked."""
    minimum = integer(desc.minimum_samples_per_output, "minimum_samples_per_output", minimum=0)
    maximum = integer(desc.maximum_samples_per_output, "maximum_samples_per_output", minimum=1)
    if minimum > maximum:
        raise ValidationError("minimum_samples_per_output", f"{minimum} is above maximum_samples_per_output {maximum}")
    region = desc.minimum_region_size
    if region is not None:
        region = f32_number(region, "minimum_region_size")
    return dict(
        reduction_function=choice(desc.reduction_function, "reduction_function", REDUCTIONS),
        interpolation_mode=choice(desc.interpolation_mode, "interpolation_mode", INTERPOLATIONS),
        spatial_scale_x=f32_number(desc.spatial_scale_x, "spatial_scale_x"),
        spatial_scale_y=f32_number(desc.spatial_scale_y, "spatial_scale_y"),
        minimum_samples_per_output=minimum, maximum_samples_per_output=maximum,
        minimum_region_size=region,
        weighted_corner_max=flag(desc.weighted_corner_max, "weighted_corner_max"),
    )


def _offsets(desc) -> dict:
    return dict(input_pixel_offset=f32_number(desc.input_pixel_offset, "input_pixel_offset"),
                output_pixel_offset=f32_number(desc.output_pixel_offset, "output_pixel_offset"),
                align_regions_to_corners=flag(desc.align_regions_to_corners, "align_regions_to_corners"))


class _RoiAlign(_Description):
    """What the two forward descriptions share."""

    kernel = "roi_align"

    def _validate(self) -> None:
        input = _check_tensor(self.input, "input")
        _check_type(input, "input", FLOAT_TYPES)
        if input.rank != 4:
            raise ValidationError("input.sizes", f"ROI align takes a 4-D input {{N, C, H, W}}, got {input.sizes}")
        rois = _rois(self.roi, input)
        size = _output_size(self, "output", rois, input)
        _check_table(rois, size)
        _set(self, **_sampling(self),
             out_of_bounds_input_value=f32_number(self.out_of_bounds_input_value, "out_of_bounds_input_value"),
             batch_indices=_batch_indices(self.batch_indices, rois), output_size=size,
             output=_output_like(self.output, "output", (rois, input.sizes[1]) + size, input.data_type))

    def input_tensors(self) -> Roles:
        return (("input", self.input), ("roi", self.roi), ("batch_indices", self.batch_indices))

    def output_tensors(self) -> Roles:
        return (("output", self.output),)


_FIELDS_DOC = """
    Parameters
    ----------
    input : TensorDesc
        {N, C, H, W}: FLOAT32, FLOAT16 or BFLOAT16.
    roi : TensorDesc
        {1, R, 4} or {1, 1, R, 4} of the input's type: ``[x1, y1, x2, y2]`` per ROI, x along
        W (DirectML also takes {R, 4}, which a TensorDesc cannot hold: the functions take
        (R, 4) arrays).  Regions may be empty or inverted (mirrored).
    batch_indices : TensorDesc
        {1, 1, R} or {1, 1, 1, R}, UINT32, INT32, UINT64 or INT64: each ROI's image.  One
        outside [0, N) (negative included) reads ``out_of_bounds_input_value`` everywhere.
    output : TensorDesc, optional
        {R, C, height, width}; default None: inferred from ``output_size``.
    reduction_function : str, default "average"
        "average" or "max" of each output's samples; "max" takes the interpolated samples'
        maximum (DirectML's pseudo-code), or see ``weighted_corner_max``.
    interpolation_mode : str, default "linear"
        "linear" (bilinear) or "nearest_neighbor" (the nearer element along each axis,
        halves to the lower).
    spatial_scale_x, spatial_scale_y : float, default 1.0
        Multiply the ROI corners (in float32) along W and H.
    out_of_bounds_input_value : float, default 0.0
        What a sample outside [-1, size] along either axis reads.
    minimum_samples_per_output, maximum_samples_per_output : int, default 1 and 2^32 - 1
        Samples per output along each axis: ``ceil(region / output size)`` clamped to
        them.  0 is allowed as the minimum (an extension): an empty or inverted region
        then gets no samples and gives 0, as ONNX's adaptive sampling does.
"""
_EXTENSIONS_DOC = """    output_size : int or (int, int), optional, keyword-only
        (height, width) of each ROI's output, an extension (DirectML reads it from the
        output tensor); default None: the given output's.
    minimum_region_size : float, optional, keyword-only
        An extension: regions smaller than this along an axis are enlarged to it (ONNX's
        output_half_pixel and torchvision's ``aligned=False`` take 1.0); default None: not.
    weighted_corner_max : bool, default False, keyword-only
        An extension: with "max", each sample's value is the largest of its four
        bilinear corners each multiplied by its weight (ONNX's reference and ONNX
        Runtime's default max mode) instead of the interpolated value.

    Raises
    ------
    ValidationError
        Naming the field that is malformed, of an unsupported type, or inconsistent with
        the others.
    """


@dataclass(frozen=True)
class RoiAlignDesc(_RoiAlign):
    input: TensorDesc
    roi: TensorDesc
    batch_indices: TensorDesc
    output: Optional[TensorDesc] = None
    _: KW_ONLY
    reduction_function: str = "average"
    interpolation_mode: str = "linear"
    spatial_scale_x: float = 1.0
    spatial_scale_y: float = 1.0
    out_of_bounds_input_value: float = 0.0
    minimum_samples_per_output: int = 1
    maximum_samples_per_output: int = U32_MAX
    output_size: Optional[tuple] = None
    minimum_region_size: Optional[float] = None
    weighted_corner_max: bool = False

    # ROI_ALIGN samples at pixel centres: ROI_ALIGN1's defaults.
    input_pixel_offset = 0.5
    output_pixel_offset = -0.5
    align_regions_to_corners = False

    def __post_init__(self) -> None:
        self._validate()


RoiAlignDesc.__doc__ = ("DML_ROI_ALIGN_OPERATOR_DESC: ROI_ALIGN1 with pixel centres at half pixels "
                        "(input_pixel_offset 0.5, output_pixel_offset -0.5) and regions not aligned to corners.\n"
                        + _FIELDS_DOC + _EXTENSIONS_DOC)


@dataclass(frozen=True)
class RoiAlign1Desc(_RoiAlign):
    input: TensorDesc
    roi: TensorDesc
    batch_indices: TensorDesc
    output: Optional[TensorDesc] = None
    _: KW_ONLY
    reduction_function: str = "average"
    interpolation_mode: str = "linear"
    spatial_scale_x: float = 1.0
    spatial_scale_y: float = 1.0
    input_pixel_offset: float = 0.5
    output_pixel_offset: float = -0.5
    out_of_bounds_input_value: float = 0.0
    minimum_samples_per_output: int = 1
    maximum_samples_per_output: int = U32_MAX
    align_regions_to_corners: bool = False
    output_size: Optional[tuple] = None
    minimum_region_size: Optional[float] = None
    weighted_corner_max: bool = False

    def __post_init__(self) -> None:
        self._validate()
        _set(self, **_offsets(self))


RoiAlign1Desc.__doc__ = ("DML_ROI_ALIGN1_OPERATOR_DESC: ROI align with the pixel offsets and corner alignment "
                         "as fields.\n" + _FIELDS_DOC + """    input_pixel_offset : float, default 0.5
        Subtracted from the scaled corners (0.5: pixel centres at half pixels; 0: ONNX's
        output_half_pixel, torchvision's ``aligned=False``).
    output_pixel_offset : float, default -0.5
        Sample i of a bin of n sits at ``(i - output_pixel_offset) / n`` of the bin.
    align_regions_to_corners : bool, default False
        Spread the T = size * samples sample points of a region from its first corner to
        its last (point k at ``k / (T - 1)`` of the region; one point: its centre) instead
        of evenly within it; ``output_pixel_offset`` is then unused.
""" + _EXTENSIONS_DOC)


@dataclass(frozen=True)
class RoiAlignGradDesc(_Description):
    """DML_ROI_ALIGN_GRAD_OPERATOR_DESC: the gradients of ROI_ALIGN1 (same fields, less
    ``out_of_bounds_input_value``: an out-of-bounds sample reads a constant, whose gradient
    is 0).

    ``output_gradient`` (dx, the input's sizes) gets each output's ``input_gradient`` (dy)
    spread over the input elements its samples read, with the samples' weights: the
    average's dy / samples to every sample, the maximum's dy to its first largest sample.
    A deterministic gather (no float atomics): the same bits run after run.  The gradient
    of the ROI coordinates (DirectML's optional ``OutputROIGradientTensor``) is not computed:
    ``output_roi_gradient`` must be None.

    Parameters
    ----------
    input : TensorDesc, optional
        The forward input {N, C, H, W}; needed for "max".
    input_gradient : TensorDesc
        dy, {R, C, height, width}.
    roi, batch_indices : TensorDesc
        The forward pass's.
    output_gradient : TensorDesc, optional
        dx; default None: a packed tensor of the input's sizes.
    output_roi_gradient : None
        DirectML's gradient of the ROI coordinates, which poolgpu does not compute: a given
        tensor is a ValidationError.
    reduction_function, interpolation_mode, spatial_scale_x, spatial_scale_y,
    input_pixel_offset, output_pixel_offset, minimum_samples_per_output,
    maximum_samples_per_output, align_regions_to_corners
        The forward pass's, as for RoiAlign1Desc.
    input_sizes : sequence of 4 int, optional, keyword-only
        An extension: the forward input's sizes where ``input`` and ``output_gradient`` are
        not given.
    minimum_region_size, weighted_corner_max : keyword-only
        The forward pass's extensions, as for RoiAlign1Desc.

    Raises
    ------
    ValidationError
        Naming the field that is malformed, of an unsupported type, or inconsistent with
        the others.
    """

    input: Optional[TensorDesc]
    input_gradient: TensorDesc
    roi: TensorDesc
    batch_indices: TensorDesc
    output_gradient: Optional[TensorDesc] = None
    output_roi_gradient: Optional[TensorDesc] = None
    _: KW_ONLY
    reduction_function: str = "average"
    interpolation_mode: str = "linear"
    spatial_scale_x: float = 1.0
    spatial_scale_y: float = 1.0
    input_pixel_offset: float = 0.5
    output_pixel_offset: float = -0.5
    minimum_samples_per_output: int = 1
    maximum_samples_per_output: int = U32_MAX
    align_regions_to_corners: bool = False
    input_sizes: Optional[tuple] = None
    minimum_region_size: Optional[float] = None
    weighted_corner_max: bool = False

    kernel = "roi_align_grad"
    out_of_bounds_input_value = 0.0

    def __post_init__(self) -> None:
        if self.output_roi_gradient is not None:
            raise ValidationError("output_roi_gradient", "poolgpu does not compute the gradient of the ROI "
                                                         "coordinates; leave output_roi_gradient None")
        dy = _check_tensor(self.input_gradient, "input_gradient")
        _check_type(dy, "input_gradient", FLOAT_TYPES)
        if dy.rank != 4:
            raise ValidationError("input_gradient.sizes", f"expected {{R, C, height, width}}, got {dy.sizes}")
        fields = _sampling(self)
        sizes = self._input_sizes(dy)
        if self.input is not None:
            _check_type(self.input, "input", (dy.data_type,))
        elif fields["reduction_function"] == "max":
            raise ValidationError("input", "the forward input is needed for 'max' (its argmax)")
        like = TensorDesc(dy.data_type, sizes)
        rois = _rois(self.roi, like)
        if dy.sizes[:2] != (rois, sizes[1]):
            raise ValidationError("input_gradient.sizes", f"expected {{{rois}, {sizes[1]}, height, width}} (the ROIs, "
                                                          f"the input's channels), got {dy.sizes}")
        _check_table(rois, dy.sizes[2:])
        dx = self.output_gradient
        dx = TensorDesc(dy.data_type, sizes) if dx is None else _output_like(dx, "output_gradient", sizes,
                                                                              dy.data_type)
        _set(self, **fields, **_offsets(self), batch_indices=_batch_indices(self.batch_indices, rois),
             input_sizes=sizes, output_gradient=dx)

    def _input_sizes(self, dy: TensorDesc) -> tuple:
        known = [t.sizes for t in (self.input, self.output_gradient) if t is not None and _check_tensor(t, "input")]
        if self.input_sizes is not None:
            known.append(integers(sequence(self.input_sizes, "input_sizes", "sizes"), "input_sizes", 4, minimum=1))
        if not known:
            raise ValidationError("input_sizes", "give the forward input, output_gradient or input_sizes: the "
                                                 "input's sizes cannot be derived from dy's")
        if any(len(k) != 4 for k in known) or any(k != known[0] for k in known):
            raise ValidationError("input_sizes", f"the forward input's sizes disagree or are not {{N, C, H, W}}: "
                                                 f"{known}")
        return tuple(known[0])

    @property
    def output_size(self) -> tuple:
        """(height, width) of each ROI's output: dy's."""
        return self.input_gradient.sizes[2:]

    def input_tensors(self) -> Roles:
        given = (("input", self.input),) if self.input is not None else ()
        return given + (("input_gradient", self.input_gradient), ("roi", self.roi), ("batch_indices", self.batch_indices))

    def output_tensors(self) -> Roles:
        return (("output_gradient", self.output_gradient),)

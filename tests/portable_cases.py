"""The cases exported as bundles for the portable-kernel tests (test_portable.py): every
operator family, data type, layout, dimension count and tuning preset the suite covers, and
every distinct shader they compile to, chosen from a fixed pool of candidates (a case is
taken when it adds something not yet covered, so new kernels are picked up as the pool
reaches them), plus chunked programs and long windows."""

import dataclasses
import functools
import itertools
import math
import random

import numpy as np

import poolgpu as pg
from helpers import ALL_TYPES, FLOAT_TYPES, PLANE_WORKGROUPS, layout_strides, random_values, with_variants
from poolgpu.dispatches import Planner

OPERATORS = ("max", "average", "lp", "max_grad", "average_grad", "unpool", "unpool_grad", "adaptive_max",
             "adaptive_average", "adaptive_max_grad", "adaptive_average_grad", "roi", "fractional_max",
             "fractional_max_grad", "lp_grad", "roi_grad", "quantized_average", "integer_adaptive_average")
ALL_TYPE_OPERATORS = ("max", "unpool", "unpool_grad", "adaptive_max", "fractional_max")
QUANTIZED_OPERATORS = ("quantized_average", "integer_adaptive_average")   # (int8 and uint8)
WHOLE_ONLY_OPERATORS = ("roi_grad",)  # never chunked: beyond a binding, a DeviceError (docs/design.md)
QUANTIZED_TYPES = (pg.DataType.INT8, pg.DataType.UINT8)
ROUNDINGS = ("directml", "onnxruntime", "pytorch", "onnxruntime_global")
TUNINGS = {"cpu": pg.Tuning.for_cpu(), "gpu": pg.Tuning.for_gpu(),
           "block-taps": dataclasses.replace(pg.Tuning.for_cpu(), row_gathers=False, windows_first=False),
           # long windows, bins and planes split into parts (and merged) past 256 iterations
           "split": dataclasses.replace(pg.Tuning.for_cpu(), loop_budget=256)}
SAMPLED_TUNINGS = tuple(TUNINGS)  # (the fixed sample's: adding one would redraw it)
# the GPU kernel variants (helpers.VARIANT_FIELDS): pinned cases only, each always taken
# (their code paths are override constants of kernels other cases reach)
VARIANT_TUNINGS = {"cpu-variants": with_variants("cpu"), "gpu-variants": with_variants("gpu"),
                   "cpu-workgroups": with_variants("cpu", plane_workgroups=PLANE_WORKGROUPS)}
TUNINGS.update(VARIANT_TUNINGS)
IN_LAYOUTS = ("packed", "channels_last", "gaps", "broadcast")
OUT_LAYOUTS = ("packed", "channels_last", "gaps", "wide")
# name -> (spatial sizes (D, H, W: the last `dims` are used), channels, window, strides, padding, dilation)
GEOMETRIES = {
    "odd": ((5, 9, 14), 3, (3, 3, 3), (2, 2, 2), 1, 1),
    "aligned": ((6, 8, 16), 4, (2, 2, 2), (2, 2, 2), 0, 1),
    "overlap": ((5, 6, 16), 8, (3, 3, 3), (1, 1, 1), 1, 1),
    "dilated": ((7, 9, 16), 4, (2, 2, 2), (1, 1, 1), 0, 2),
    "global": ((5, 12, 16), 4, (5, 12, 16), (1, 1, 1), 0, 1),
    "long": ((3, 4, 300), 2, (2, 3, 70), (1, 1, 9), 0, 1),  # long windows
    "dense": ((4, 6, 400), 2, (3, 4, 300), (1, 1, 1), 0, 1),  # each element in hundreds of windows
}
# Pinned cases' only (not sampled: adding a geometry to GEOMETRIES would redraw the sample)
PINNED_GEOMETRIES = {
    "quads": ((4, 8, 16), 4, (3, 3, 5), (1, 1, 1), 0, 1),  # fractional outputs 4 x 8: whole 4-element chunks
    "small": ((2, 2, 3), 4, (1, 1, 1), (1, 1, 1), 0, 1),  # ROI align's outputs larger than the input
}


@dataclasses.dataclass(frozen=True)
class Case:
    operator: str
    data_type: pg.DataType
    geometry: str
    dims: int
    in_layout: str
    out_layout: str
    grad_layout: str
    indices: str
    tuning: str
    seed: int

    @property
    def id(self) -> str:
        """The case's name, one per case: the export directories of tests/test_portable.py
        are named by it (a quantized case names its rounding, which its seed picks)."""
        rounding = [ROUNDINGS[self.seed % 4]] if self.operator == "quantized_average" else []
        return "-".join([self.operator, self.data_type.name.lower(), f"{self.dims}d", self.geometry, self.in_layout,
                         self.out_layout, self.tuning] + ([self.indices] if self.indices else []) + rounding)

    def describe(self, with_arrays: bool = True):
        """(description, input arrays by role); ValidationError where the geometry is invalid."""
        return describe(self, with_arrays)


def _strides(sizes, layout):
    if layout != "wide":
        return layout_strides(sizes, layout)
    strides, step = [], 1  # rows padded by 4 elements: contiguous along W, not dense
    for d in range(len(sizes) - 1, -1, -1):
        strides.insert(0, step)
        step *= sizes[d] + (4 if d == len(sizes) - 1 else 0)
    return tuple(strides)


def _desc(data_type, sizes, layout):
    return pg.TensorDesc(data_type, sizes, _strides(sizes, layout))


def describe(case: Case, with_arrays: bool = True):
    """(description, input arrays by role, or None without ``with_arrays``)."""
    desc, makers = _described(case)
    if not with_arrays:
        return desc, None
    rng = np.random.default_rng(case.seed)
    return desc, {role: make(rng) for role, make in makers.items()}


def _described(case: Case):
    """(description, role -> function of a random generator making that input's array)."""
    spatial, channels, window, strides, padding, dilation = {**GEOMETRIES, **PINNED_GEOMETRIES}[case.geometry]
    d, dt, op = case.dims, case.data_type, case.operator
    sizes = (2 if case.geometry != "long" else 1, channels) + spatial[3 - d:]
    geometry = dict(window_size=window[3 - d:], strides=strides[3 - d:], start_padding=(padding,) * d,
                    end_padding=(padding,) * d)
    dilations = (dilation,) * d

    def values(shape, layout=case.in_layout, specials=True):
        def make(rng):
            v = random_values(dt, shape, rng, specials=specials)
            return np.broadcast_to(v[:1, :1], v.shape).copy() if layout == "broadcast" else v
        return make

    x_desc = _desc(dt, sizes, case.in_layout)
    if op == "quantized_average":
        return _quantized(case, sizes, x_desc, geometry, dilations, values)
    if op in ("max", "average", "lp"):
        out_sizes = pg.pooling_output_sizes(sizes, dilations=dilations, **geometry)
        y = _desc(dt, out_sizes, case.out_layout)
        if op == "max":
            indices = _desc(case.indices, out_sizes, case.out_layout) if case.indices else None
            desc = pg.MaxPooling2Desc(x_desc, y, indices, dilations=dilations, **geometry)
        elif op == "average":
            desc = pg.AveragePooling1Desc(x_desc, y, dilations=dilations, include_padding=bool(case.seed % 2),
                                          **geometry)
        else:
            desc = pg.LpPooling1Desc(x_desc, y, dilations=dilations, p=1 + case.seed % 3, **geometry)
        return desc, {"input": values(sizes)}
    if op in ("max_grad", "average_grad", "lp_grad"):
        out_sizes = pg.pooling_output_sizes(sizes, dilations=dilations, **geometry)
        dy, dy_desc, dx = values(out_sizes, specials=False), _desc(dt, out_sizes, case.grad_layout), \
            _desc(dt, sizes, case.out_layout)
        if op == "max_grad":
            return (pg.MaxPoolingGradDesc(x_desc, dy_desc, dx, dilations=dilations, **geometry),
                    {"input": values(sizes), "input_gradient": dy})
        if op == "lp_grad":
            return (pg.LpPoolingGradDesc(x_desc, dy_desc, dx, dilations=dilations, p=1 + case.seed % 3, **geometry),
                    {"input": values(sizes, specials=False), "input_gradient": dy})
        return (pg.AveragePoolingGradDesc(dy_desc, dx, dilations=dilations, include_padding=bool(case.seed % 2),
                                          **geometry), {"input_gradient": dy})
    if op in ("unpool", "unpool_grad"):
        big = sizes[:2] + tuple(2 * s for s in sizes[2:])
        count = math.prod(big)
        index_type = case.indices or "uint32"
        # (laid out as the input where it is channels-last: unpooling reads them four channels per load)
        index_desc = _desc(index_type, sizes, "channels_last" if case.in_layout == "channels_last" else "packed")

        def indices(rng):  # some outside the output
            return rng.integers(0, count + count // 8 + 1, size=sizes).astype(index_type)

        if op == "unpool":
            return pg.MaxUnpoolingDesc(x_desc, index_desc, _desc(dt, big, case.out_layout)), \
                {"input": values(sizes), "indices": indices}
        return pg.MaxUnpoolingGradDesc(_desc(dt, big, case.grad_layout), index_desc, _desc(dt, sizes, case.out_layout)), \
            {"input_gradient": values(big, case.grad_layout), "indices": indices}
    if op in ("fractional_max", "fractional_max_grad"):   # (2-D and 3-D)
        windows = tuple(min(k, s) for k, s in zip(geometry["window_size"], sizes[2:]))
        out_sizes = sizes[:2] + tuple(max(1, (s - k + 1) * 2 // 3) for s, k in zip(sizes[2:], windows))
        sample_type = dt if dt.is_float else pg.DataType.FLOAT32
        samples = pg.TensorDesc(sample_type, sizes[:2] + (d,))

        def uniform(rng):
            return (rng.random(samples.sizes) * 0.99).astype(np.float32).astype(sample_type.numpy)

        if op == "fractional_max":
            indices = _desc(case.indices, out_sizes, case.out_layout) if case.indices else None
            return pg.FractionalMaxPoolingDesc(x_desc, samples, _desc(dt, out_sizes, case.out_layout), indices,
                                               window_size=windows), {"input": values(sizes), "samples": uniform}
        return pg.FractionalMaxPoolingGradDesc(x_desc, samples, _desc(dt, out_sizes, case.grad_layout),
                                               _desc(dt, sizes, case.out_layout), window_size=windows), \
            {"input": values(sizes), "samples": uniform, "input_gradient": values(out_sizes, specials=False)}
    out_sizes = sizes[:2] + tuple(max(1, (s + 1) // 3) for s in sizes[2:])
    if op == "integer_adaptive_average":   # ("global": one bin per plane, long enough to split)
        bins = sizes[:2] + (1,) * d if case.geometry == "global" else out_sizes
        return pg.AdaptiveAveragePoolingDesc(x_desc, _desc(dt, bins, case.out_layout)), {"input": values(sizes)}
    if op in ("adaptive_max", "adaptive_average"):
        y = _desc(dt, out_sizes, case.out_layout)
        if op == "adaptive_max":
            indices = _desc(case.indices, out_sizes, case.out_layout) if case.indices else None
            return pg.AdaptiveMaxPoolingDesc(x_desc, y, indices), {"input": values(sizes)}
        return pg.AdaptiveAveragePoolingDesc(x_desc, y), {"input": values(sizes)}
    if op in ("adaptive_max_grad", "adaptive_average_grad"):
        dy, dy_desc, dx = values(out_sizes, specials=False), _desc(dt, out_sizes, case.grad_layout), \
            _desc(dt, sizes, case.out_layout)
        if op == "adaptive_max_grad":
            return pg.AdaptiveMaxPoolingGradDesc(x_desc, dy_desc, dx), {"input": values(sizes), "input_gradient": dy}
        return pg.AdaptiveAveragePoolingGradDesc(dy_desc, dx), {"input_gradient": dy}
    h, w = sizes[2:]
    if op in ("roi_align", "roi_align_grad"):   # (2-D) corners anywhere near the input
        count = 1 + case.seed % 5

        def corners(rng):
            return rng.uniform(-2, max(h, w) + 2, (1, 1, count, 4)).astype(dt.numpy)

        def batch(rng):
            return rng.integers(0, sizes[0], (1, 1, count)).astype(np.uint32)

        fields = dict(spatial_scale_x=0.5 + case.seed % 2 * 0.5, minimum_samples_per_output=0,
                      reduction_function="max" if case.seed % 2 else "average")
        roi, batch_desc = pg.TensorDesc(dt, (1, 1, count, 4)), pg.TensorDesc("uint32", (1, 1, count))
        if op == "roi_align_grad":
            dy = (count, sizes[1], 2, 3)
            desc = pg.RoiAlignGradDesc(x_desc, _desc(dt, dy, case.grad_layout), roi, batch_desc,
                                       _desc(dt, sizes, case.out_layout), **fields)
            return desc, {"input": values(sizes), "input_gradient": values(dy, specials=False), "roi": corners,
                          "batch_indices": batch}
        desc = pg.RoiAlign1Desc(x_desc, roi, batch_desc, _desc(dt, (count, sizes[1], 2, 3), case.out_layout),
                                align_regions_to_corners=case.seed % 3 == 0, **fields)
        return desc, {"input": values(sizes), "roi": corners, "batch_indices": batch}
    # roi (2-D): batches (some outside the input) and corners anywhere near it
    count = 1 + case.seed % 6

    def rois(rng):
        return np.stack([rng.integers(-1, sizes[0] + 1, count), rng.integers(-2, w + 2, count),
                         rng.integers(-2, h + 2, count), rng.integers(-2, w + 2, count),
                         rng.integers(-2, h + 2, count)], axis=1).astype(dt.numpy).reshape(1, 1, count, 5)

    pooled = (2, 3)
    scale = 0.5 + case.seed % 2 * 0.5
    if op == "roi_grad":
        dy = (count, sizes[1]) + pooled
        desc = pg.RoiPoolingGradDesc(x_desc, pg.TensorDesc(dt, (1, 1, count, 5)), _desc(dt, dy, case.grad_layout),
                                     _desc(dt, sizes, case.out_layout), spatial_scale=scale, pooled_size=pooled)
        return desc, {"input": values(sizes), "roi": rois, "input_gradient": values(dy, specials=False)}
    desc = pg.RoiPoolingDesc(x_desc, pg.TensorDesc(dt, (1, 1, count, 5)),
                             _desc(dt, (count, sizes[1]) + pooled, case.out_layout),
                             spatial_scale=scale, pooled_size=pooled)
    return desc, {"input": values(sizes), "roi": rois}


def _quantized(case: Case, sizes, x_desc, geometry, dilations, values):
    """A quantized average: the seed picks the rounding, scales and zero points per tensor or
    per channel, and which zero points are given."""
    dt, seed = case.data_type, case.seed
    out_sizes = pg.pooling_output_sizes(sizes, dilations=dilations, **geometry)
    per_tensor, per_channel = (1,) * len(sizes), (1, sizes[1]) + (1,) * (len(sizes) - 2)
    shapes = [per_channel if seed >> (k + 4) & 1 else per_tensor for k in range(4)]
    given = (True, seed % 3 != 1, True, seed % 5 != 2)
    descs = [pg.TensorDesc(t, shape) if present else None
             for t, shape, present in zip(("float32", dt, "float32", dt), shapes, given)]

    def scale(shape):
        return lambda rng: rng.uniform(0.01, 0.5, shape).astype(np.float32)

    def zero(shape):
        return lambda rng: random_values(dt, shape, rng, specials=False)

    makers = {"input": values(sizes)}
    for role, desc, make in zip(("input_scale", "input_zero_point", "output_scale", "output_zero_point"), descs,
                                (scale, zero, scale, zero)):
        if desc is not None:
            makers[role] = make(desc.sizes)
    desc = pg.QuantizedLinearAveragePoolingDesc(x_desc, *descs, _desc(dt, out_sizes, case.out_layout),
                                                dilations=dilations, include_padding=bool(seed % 2),
                                                rounding=ROUNDINGS[seed % 4], **geometry)
    return desc, makers


# Candidates that reach kernels a sample of the combinations rarely does.
PINNED = (
    Case("max_grad", pg.DataType.FLOAT32, "overlap", 2, "packed", "packed", "packed", None, "cpu", 1),  # row gathers
    Case("max_grad", pg.DataType.FLOAT16, "overlap", 2, "channels_last", "channels_last", "channels_last", None,
         "cpu", 2),  # four channels per lane
    Case("max_grad", pg.DataType.FLOAT16, "aligned", 2, "packed", "packed", "gaps", None, "cpu", 3),  # dx in pairs
    Case("average_grad", pg.DataType.FLOAT32, "dense", 2, "packed", "packed", "packed", None, "split", 4),  # split gather
    Case("max_grad", pg.DataType.FLOAT16, "aligned", 2, "broadcast", "packed", "packed", None, "cpu", 5),  # dy in chunks
    Case("fractional_max_grad", pg.DataType.BFLOAT16, "dense", 2, "packed", "packed", "packed", None, "split", 6),
    Case("fractional_max", pg.DataType.FLOAT16, "odd", 3, "channels_last", "packed", "packed", "uint32", "cpu", 7),
    Case("lp_grad", pg.DataType.FLOAT32, "overlap", 2, "packed", "gaps", "packed", None, "cpu", 8),
    Case("roi_grad", pg.DataType.FLOAT32, "odd", 2, "packed", "packed", "packed", None, "cpu", 9),
    Case("roi_grad", pg.DataType.FLOAT16, "overlap", 2, "packed", "packed", "packed", None, "split", 17),  # by parts
    # ROI align, forward and gradient, the average and the maximum, split where long
    Case("roi_align", pg.DataType.FLOAT32, "odd", 2, "channels_last", "packed", "packed", None, "cpu", 13),
    Case("roi_align", pg.DataType.FLOAT16, "long", 2, "packed", "gaps", "packed", None, "split", 14),
    Case("roi_align_grad", pg.DataType.FLOAT32, "odd", 2, "packed", "packed", "gaps", None, "cpu", 15),
    # ROI align's average over a channels-last input (its own), and over a copy of it (an
    # output larger than the input: three ROIs of 4 x 2 x 3 outputs from 2 x 4 x 2 x 3)
    Case("roi_align", pg.DataType.FLOAT16, "overlap", 2, "channels_last", "packed", "packed", None, "cpu", 24),
    Case("roi_align", pg.DataType.FLOAT32, "small", 2, "gaps", "packed", "packed", None, "cpu", 22),
    Case("roi_align_grad", pg.DataType.BFLOAT16, "overlap", 2, "packed", "channels_last", "packed", None, "split",
         16),
    # the GPU kernel variants: the plane walk in steps of chunks, the channels walk written
    # out, grids numbered flat (whole workgroups), packed planes under the GPU preset (planes
    # of 192 and 16 elements in groups of 64 and 8 lanes, and the gradients over them), and
    # planes cut for a number of workgroups
    Case("max", pg.DataType.FLOAT32, "global", 3, "packed", "packed", "packed", "uint32", "cpu-variants", 10),
    Case("lp", pg.DataType.FLOAT32, "global", 3, "packed", "packed", "packed", None, "cpu-workgroups", 16),
    Case("average", pg.DataType.FLOAT16, "global", 2, "packed", "gaps", "packed", None, "gpu-variants", 13),
    Case("max_grad", pg.DataType.FLOAT16, "global", 1, "packed", "gaps", "packed", None, "gpu-variants", 14),
    Case("average_grad", pg.DataType.FLOAT32, "global", 2, "packed", "packed", "packed", None, "gpu-variants", 15),
    Case("average", pg.DataType.FLOAT16, "overlap", 2, "channels_last", "channels_last", "packed", None, "gpu-variants",
         11),
    Case("unpool", pg.DataType.FLOAT16, "odd", 2, "packed", "wide", "packed", "uint64", "gpu-variants", 12),
    # unpooling's gather (runs of one element (output rows with gaps), four along W, four
    # channels with their indices one by one and in chunks); the fractional walks: one output,
    # four from chunks, stored in one store; the gradient's gather over dx one element and four
    # per invocation
    Case("unpool", pg.DataType.BFLOAT16, "aligned", 2, "packed", "gaps", "packed", "uint32", "cpu-variants", 13),
    Case("unpool", pg.DataType.FLOAT32, "aligned", 3, "packed", "channels_last", "packed", "uint32", "gpu-variants",
         14),
    Case("unpool", pg.DataType.INT8, "aligned", 2, "channels_last", "channels_last", "packed", "uint64", "cpu-variants",
         15),
    Case("fractional_max", pg.DataType.FLOAT32, "overlap", 2, "packed", "packed", "packed", "uint64", "cpu-variants",
         16),
    Case("fractional_max_grad", pg.DataType.FLOAT16, "odd", 3, "packed", "packed", "packed", None, "gpu-variants", 17),
    Case("fractional_max", pg.DataType.BFLOAT16, "quads", 2, "packed", "packed", "packed", "uint32", "gpu-variants",
         18),
    Case("fractional_max_grad", pg.DataType.FLOAT32, "quads", 3, "packed", "packed", "packed", None, "cpu-variants",
         19),
    # 16-bit pairs from shared words (the GPU preset's general walk): windows starting at odd
    # elements (padding 1), the last output of odd rows alone
    Case("max", pg.DataType.FLOAT16, "odd", 2, "packed", "packed", "packed", "uint32", "gpu-variants", 20),
    # Lp pooling's gradient over disjoint windows in one pass
    Case("lp_grad", pg.DataType.FLOAT16, "aligned", 2, "packed", "packed", "gaps", None, "gpu-variants", 21),
    # quantized average pooling's walks under each rounding (seed % 4: directml, onnxruntime,
    # pytorch, onnxruntime_global; rows 14 wide: the rows walk from single loads), and the
    # integer adaptive average's split bins
    Case("quantized_average", pg.DataType.UINT8, "odd", 2, "packed", "packed", "packed", None, "cpu", 0),
    Case("quantized_average", pg.DataType.INT8, "odd", 2, "packed", "gaps", "packed", None, "cpu", 2),
    Case("quantized_average", pg.DataType.INT8, "aligned", 1, "packed", "packed", "packed", None, "cpu", 2),
    Case("quantized_average", pg.DataType.INT8, "aligned", 1, "packed", "channels_last", "packed", None, "cpu", 0),
    Case("quantized_average", pg.DataType.INT8, "aligned", 1, "packed", "channels_last", "packed", None, "cpu", 2),
    Case("quantized_average", pg.DataType.UINT8, "aligned", 1, "channels_last", "channels_last", "packed", None, "cpu", 0),
    Case("quantized_average", pg.DataType.INT8, "aligned", 1, "channels_last", "channels_last", "packed", None, "cpu", 2),
    Case("quantized_average", pg.DataType.UINT8, "global", 2, "channels_last", "channels_last", "packed", None, "cpu", 3),
    Case("quantized_average", pg.DataType.INT8, "global", 1, "packed", "packed", "packed", None, "cpu", 2),
    Case("quantized_average", pg.DataType.UINT8, "global", 3, "packed", "packed", "packed", None, "gpu", 3),
    Case("quantized_average", pg.DataType.INT8, "global", 3, "channels_last", "packed", "packed", None, "split", 2),
    Case("quantized_average", pg.DataType.UINT8, "long", 2, "packed", "gaps", "packed", None, "split", 241),
    Case("integer_adaptive_average", pg.DataType.INT8, "global", 2, "packed", "packed", "packed", None, "split", 13),
)


def _pool():
    """The candidates, in a fixed order: the pinned ones, then a fixed sample of every
    combination."""
    yield from PINNED
    rng = random.Random(2026)
    for op in OPERATORS:
        types = ALL_TYPES if op in ALL_TYPE_OPERATORS else QUANTIZED_TYPES if op in QUANTIZED_OPERATORS else FLOAT_TYPES
        for dt, tuning, geometry, dims, in_layout, out_layout, grad_layout, indices in itertools.product(
                types, SAMPLED_TUNINGS, GEOMETRIES, (1, 2, 3), IN_LAYOUTS, OUT_LAYOUTS, ("gaps", "packed", "channels_last", "wide"),
                (None, "uint32", "uint64")):
            if (op in ("roi", "roi_grad") and dims != 2) or rng.random() > 0.005:
                continue
            yield Case(op, dt, geometry, dims, in_layout, out_layout, grad_layout, indices, tuning,
                       rng.randrange(2**31))


def _features(case: Case, desc) -> set:
    """What a case covers: its operator with its data type, layouts, dimensions, geometry
    and tuning, and every shader (kernel and the data types of its slots) it dispatches."""
    features = {("type", case.operator, case.data_type), ("in", case.operator, case.in_layout),
                ("out", case.operator, case.out_layout), ("dims", case.operator, case.dims)}
    if case.geometry == "long":
        features.add(("long", case.operator))
    if case.indices:
        features.add(("indices", case.operator, case.indices))
    if case.tuning in VARIANT_TUNINGS:
        features.add(("variant", case))
    plan = Planner(desc, TUNINGS[case.tuning], 2**27, 256)
    for pass_ in plan.program.passes:  # (a bundle's tensors start at byte 0: the aligned program)
        kernel, data_types, _, _, value_type = plan.pipeline_key(pass_)
        by_slot = dict(zip((s.name for s in kernel.slots), data_types))
        features.add(("kernel", kernel))
        features.add(("value", kernel.file, by_slot[kernel.value_slot] or value_type))
        for slot, data_type in zip(kernel.slots, data_types):
            features.add(("slot", kernel.file, slot, data_type and data_type.storage))
    return features


@functools.lru_cache(maxsize=None)
def _candidates() -> tuple:
    found = []
    for case in _pool():
        try:
            desc, _ = case.describe(with_arrays=False)
        except pg.ValidationError:
            continue
        found.append((case, frozenset(_features(case, desc))))
    return tuple(found)


@functools.lru_cache(maxsize=None)
def cases() -> tuple:
    """The cases: candidates of the pool taken one by one, each time the one covering most of
    what those taken before did not (a greedy set cover), until they cover all the pool does."""
    candidates = list(_candidates())
    covered, chosen = set(), []
    while True:
        best, new = None, set()
        for case, features in candidates:
            gain = features - covered
            if len(gain) > len(new):
                best, new = case, gain
        if best is None:
            return tuple(chosen)
        chosen.append(best)
        covered |= new


def covered_kernels() -> frozenset:
    """The kernels the cases dispatch."""
    taken = set(cases())
    return frozenset(f[1] for case, features in _candidates() if case in taken for f in features if f[0] == "kernel")


def chunked_cases() -> tuple:
    """One case per operator whose tensors exceed a small binding (run in chunks; no
    broadcast input, which a binding holds whole), but those that run whole only."""
    chosen = []
    for k, op in enumerate(OPERATORS):
        if op in WHOLE_ONLY_OPERATORS:
            continue
        types = ALL_TYPES if op in ALL_TYPE_OPERATORS else QUANTIZED_TYPES if op in QUANTIZED_OPERATORS else FLOAT_TYPES
        dims = 2 if op.startswith("roi") else 2 + k % 2 if op.startswith("fractional") else 1 + k % 3
        chosen.append(Case(op, types[k % len(types)], ("odd", "overlap", "aligned")[k % 3], dims,
                           IN_LAYOUTS[k % 3], OUT_LAYOUTS[k % 3], "gaps", ("uint32", "uint64")[k % 2], "cpu", 1000 + k))
    return tuple(chosen)


def directml_bytes(array, desc) -> bytes:
    """A tensor's DirectML buffer bytes: the elements at their strides, little-endian, in
    ``total_size_in_bytes`` (zeros between them)."""
    item = desc.data_type.size
    raw = np.zeros(desc.total_size_in_bytes, np.uint8)
    flat = raw[: len(raw) // item * item].view(desc.data_type.numpy.newbyteorder("<"))
    keep = tuple(slice(0, 1) if st == 0 else slice(None) for st in desc.strides)  # broadcast: the first entry
    source = np.asarray(array)[keep]
    np.lib.stride_tricks.as_strided(flat, source.shape, tuple(s * item for s in desc.strides))[...] = source
    return raw.tobytes()

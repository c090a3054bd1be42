"""What the bench measures: the standard cases (shapes and windows) and the operators run
on them, each as a :class:`Problem` (inputs, the poolgpu calls, expected outputs).

Case names and shapes are fixed so that results stay comparable across
runs and machines; ``tiny`` shapes keep the same windows for plumbing tests.  Expected
outputs come from the independent NumPy reference (``tests/reference.py``), computed once
per operator, case and data type, and shared by every layout and peer.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Optional

import numpy as np

import poolgpu as pg  # descriptions are looked up only when called: operators may land one by one

try:  # NumPy's bfloat16, np.dtype("bfloat16"), for the bfloat16 rows (the bench extra installs it)
    import ml_dtypes  # noqa: F401
except ImportError:
    pass

from . import ROOT

sys.path.insert(0, str(ROOT / "tests"))
import reference  # noqa: E402  (tests/reference.py, independent of poolgpu)


@dataclass(frozen=True)
class Case:
    name: str
    sizes: tuple  # input {N, C, spatial...}
    tiny: tuple  # the same windows on a tiny input (--tiny)
    window_size: Optional[tuple]  # None: the whole spatial extent (global pooling)
    strides: Optional[tuple] = None
    padding: Optional[tuple] = None  # start = end
    ops: tuple = ()
    note: str = ""
    every_variant: bool = False  # by default run in every data type and layout, not only float32 NCHW
    dtypes: tuple = ("float32",)  # the data types of a default run (NCHW) where not every_variant
    output_ratio: Optional[float] = None  # fractional pooling: each output size int(in * ratio)

    def geometry(self, sizes) -> dict:
        dims = len(sizes) - 2
        return dict(
            window_size=tuple(self.window_size or sizes[2:]),
            strides=tuple(self.strides or (1,) * dims),
            start_padding=tuple(self.padding or (0,) * dims),
            end_padding=tuple(self.padding or (0,) * dims),
        )


# What poolgpu must have for each operator (names as in docs/api.md): a row whose names are
# missing is reported "not available", so operators light up as they land.
NEEDS = {
    "max": ("MaxPoolingDesc",),
    "max_idx": ("MaxPooling1Desc",),
    "max_dil2": ("MaxPooling2Desc",),
    "avg": ("AveragePoolingDesc",),
    "avg_incl_pad": ("AveragePoolingDesc",),
    "lp2": ("LpPoolingDesc",),
    "max_bwd": ("MaxPoolingGradDesc",),
    "max_fwd_bwd": ("MaxPoolingDesc", "MaxPoolingGradDesc"),
    "avg_bwd": ("AveragePoolingGradDesc",),
    "lp2_bwd": ("LpPoolingGradDesc",),   # (no case runs it by default: bench.variants --ops lp2_bwd)
    "unpool": ("MaxUnpoolingDesc",),
    "adaptive_max": ("AdaptiveMaxPoolingDesc",),  # poolgpu's own descriptions (not in DirectML)
    "adaptive_avg": ("AdaptiveAveragePoolingDesc",),
    "roi": ("RoiPoolingDesc",),
    "roi_bwd100": ("RoiPoolingGradDesc",),
    "roi_bwd1000": ("RoiPoolingGradDesc",),
    "roi_align": ("RoiAlign1Desc",),
    "roi_align1000": ("RoiAlign1Desc",),
    "roi_align_bwd": ("RoiAlignGradDesc",),
    "roi_align_bwd1000": ("RoiAlignGradDesc",),
    "fractional": ("FractionalMaxPoolingDesc",),
    "fractional_bwd": ("FractionalMaxPoolingGradDesc",),
    "qavg": ("QuantizedLinearAveragePoolingDesc",),  # DirectML's arithmetic
    "qavg_ort": ("QuantizedLinearAveragePoolingDesc",),  # ONNX Runtime's (rounding="onnxruntime")
    "qavg_torch": ("QuantizedLinearAveragePoolingDesc",),  # PyTorch's (rounding="pytorch")
}
QUANTIZED_OPS = {"qavg": "directml", "qavg_ort": "onnxruntime", "qavg_torch": "pytorch"}
FORWARD_MAX = ("max", "max_idx")
GRADIENTS = ("max_fwd_bwd", "max_bwd", "avg_bwd")
CASES = {
    case.name: case
    for case in (
        Case("A", (8, 64, 112, 112), (1, 2, 14, 14), (3, 3), (2, 2), (1, 1),
             FORWARD_MAX + ("max_dil2", "avg", "avg_incl_pad", "lp2", "unpool") + GRADIENTS,
             "ResNet stem: 3x3, strides 2, padding 1", every_variant=True),
        Case("B", (8, 256, 56, 56), (1, 4, 8, 8), (2, 2), (2, 2), None,
             FORWARD_MAX + ("max_dil2", "avg", "lp2", "unpool") + GRADIENTS,
             "VGG-style 2x2, strides 2 (no padding: include_padding changes nothing)", every_variant=True),
        Case("C", (8, 512, 7, 7), (1, 4, 7, 7), (7, 7), None, None,
             FORWARD_MAX + ("avg", "lp2", "unpool") + GRADIENTS + ("adaptive_max", "adaptive_avg"),
             "7x7 window over 7x7 = global pooling, also as adaptive pooling to 1x1", every_variant=True),
        Case("G", (8, 64, 112, 112), (1, 2, 14, 14), None, None, None,
             ("max", "avg", "lp2", "adaptive_max", "adaptive_avg"),
             "global pooling of A's input: 12544 elements per window"),
        Case("1DG", (8, 32, 65536), (1, 2, 300), None, ops=("max", "avg", "lp2", "adaptive_max", "adaptive_avg"),
             note="global pooling of 65536-element sequences (past what one invocation of llvmpipe may loop over)"),
        Case("1D", (8, 64, 12544), (1, 2, 30), (3,), (2,), (1,),
             FORWARD_MAX + ("avg", "avg_incl_pad", "lp2", "max_fwd_bwd"),
             "A's elements as one spatial dimension: 3, strides 2, padding 1"),
        Case("3D", (4, 32, 16, 56, 56), (1, 2, 6, 8, 8), (3, 3, 3), (2, 2, 2), (1, 1, 1),
             FORWARD_MAX + ("avg", "avg_incl_pad", "lp2", "max_fwd_bwd"),
             "3x3x3, strides 2, padding 1"),
        Case("ROI", (8, 256, 56, 56), (1, 4, 8, 8), None,
             ops=("roi", "roi_bwd100", "roi_bwd1000", "roi_align", "roi_align1000", "roi_align_bwd",
                  "roi_align_bwd1000"),
             note="ROI max pooling of B's input: 64 regions (8 per image), 7x7 bins; its gradient for 100 and 1000 "
                  "regions; ROI align (torchvision's aligned=True, 2x2 samples per bin) and its gradient for 100 and "
                  "1000 regions"),
        Case("FR", (8, 64, 112, 112), (1, 2, 14, 14), (2, 2), ops=("fractional", "fractional_bwd"),
             note="fractional max pooling of A's input to 79x79 (ratio 1/sqrt(2), 2x2 windows), and its gradient",
             dtypes=("float32", "bfloat16"), output_ratio=1 / math.sqrt(2)),
        Case("BF", (8, 64, 112, 112), (1, 2, 14, 14), (3, 3), (2, 2), (1, 1),
             FORWARD_MAX + ("avg", "max_fwd_bwd"), "A on bfloat16: sums in float32, rounded once",
             dtypes=("bfloat16",)),
        Case("Q", (8, 64, 112, 112), (1, 2, 14, 14), (3, 3), (2, 2), (1, 1), tuple(QUANTIZED_OPS),
             "A's windows over uint8 values: quantized average pooling (per-tensor scales and zero points) in "
             "DirectML's, ONNX Runtime's and PyTorch's arithmetic", dtypes=("uint8",)),
        # (last: each case's data are seeded by its place here)
        Case("I", (8, 512, 14, 14), (1, 4, 7, 7), (3, 3), (1, 1), (1, 1),
             FORWARD_MAX + ("avg", "lp2", "max_fwd_bwd"),
             "Inception's branch pooling: 3x3, strides 1, padding 1 over 14x14 planes (rows of no whole 4-element "
             "chunks)"),
    )
}
# --scale: every case runs again at these batch sizes, at least 100 MB per input (float32), so
# that a GPU's dispatch lasts long past its ramp-up and tail (bandwidth rows beside the
# standard, latency, rows); the input is the standard one repeated along N (ROI's boxes and
# fractional pooling's samples with it).
SCALE_BATCH = {"A": 64, "B": 64, "C": 1024, "G": 64, "1DG": 16, "1D": 64, "3D": 32, "ROI": 32, "FR": 64, "BF": 64,
               "I": 256}
DTYPES = ("float32", "float16", "bfloat16")
LAYOUTS = ("nchw", "nhwc")  # NHWC: channels last (NWC, NDHWC), for inputs and outputs alike


@dataclass
class Step:
    """One poolgpu call: ``describe(t)`` makes the operator description from ``t`` (the
    input tensors' descriptions by name, and ``t.new(data_type, sizes)`` for outputs in the
    row's layout); ``inputs``/``outputs`` map the description's roles to tensor names."""

    describe: Callable
    inputs: dict
    outputs: dict


@dataclass
class Problem:
    """One operator on one case and data type, independent of layout."""

    op: str
    inputs: dict  # name -> logical NumPy array
    steps: list
    outputs: tuple  # output tensor names, in check order
    make_expected: Callable  # () -> {name: (array, exact)}
    spec: dict  # the operator for peers: geometry and parameters
    packed: frozenset = frozenset()  # inputs that keep a packed layout (ROI boxes)

    @cached_property
    def input_scale(self) -> float:
        """The largest magnitude among the float inputs (what float results are sums of)."""
        return max((float(np.abs(a.astype(np.float32)).max(initial=0)) for a in self.inputs.values()
                    if a.dtype.kind == "f" or a.dtype.name == "bfloat16"), default=0.0)

    @cached_property
    def expected(self) -> dict:
        """The reference outputs, computed once and shared by every layout and peer."""
        return self.make_expected()


class Data:
    """Inputs and reference results of one case in one data type, made on first use;
    :meth:`repeated` gives the same along a larger N."""

    def __init__(self, case: Case, dtype: str, tiny: bool, seed: int):
        self.case, self.dtype = case, np.dtype(dtype)
        self.sizes = case.tiny if tiny else case.sizes
        self.base, self.repeats = None, 1  # (repeated(): the Data repeated, and how often)
        self.geometry = case.geometry(self.sizes)
        self.dims = len(self.sizes) - 2
        self._rng = np.random.default_rng([seed, list(CASES).index(case.name), self.dtype.itemsize])
        self._memo = {}

    def repeated(self, repeats: int) -> "Data":
        """This Data's inputs repeated ``repeats`` times along N (windows never cross N, so
        every reference result is this Data's, repeated, indices shifted): --scale's
        large rows at the cost of the standard ones' references."""
        big = Data(self.case, self.dtype, False, 0)
        big.sizes = (self.sizes[0] * repeats,) + tuple(self.sizes[1:])
        big.geometry, big.dims, big.base, big.repeats = self.geometry, self.dims, self, repeats
        return big

    def tile(self, array, indices: bool = False):
        """``array`` of the base Data (N first) repeated along N; ``indices`` (flat over the
        whole input) shifted to each repetition's part of the input."""
        tiled = np.concatenate([array] * self.repeats)
        if indices:
            step = math.prod(self.base.sizes)
            tiled = tiled + (np.arange(self.repeats) * step).astype(tiled.dtype).repeat(len(array)).reshape(
                (-1,) + (1,) * (array.ndim - 1))
        return tiled

    def memo(self, key, make):
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    @property
    def x(self) -> np.ndarray:
        """Distinct values (exact in float32 up to 2**24 elements) so that no window holds a
        tie and every peer must pick the same maximum; float16 rounds some together."""

        def make():
            if self.base is not None:
                return self.tile(self.base.x)
            if self.dtype.kind in "iu":   # (quantized values: the whole range)
                info = np.iinfo(self.dtype)
                return self._rng.integers(info.min, info.max, self.sizes, endpoint=True).astype(self.dtype)
            count = math.prod(self.sizes)
            scale = 2.0 ** -(max(count.bit_length() - 3, 0))  # values in about [-4, 4)
            values = (self._rng.permutation(count) - count // 2) * scale
            return values.astype(self.dtype).reshape(self.sizes)

        return self.memo("x", make)

    def out_sizes(self, dilations=None) -> tuple:
        return reference.output_sizes(self.sizes, dilations=dilations, **self.geometry)

    def dy(self, sizes) -> np.ndarray:
        if self.base is not None:
            return self.memo(("dy", sizes), lambda: self.tile(self.base.dy((self.base.sizes[0],) + tuple(sizes[1:]))))
        return self.memo(("dy", sizes), lambda: self._rng.standard_normal(sizes).astype(self.dtype))

    def max_pool(self, dilations=None):
        if self.base is not None:
            return self.memo(("max", dilations), lambda: tuple(
                self.tile(a, indices=k == 1) for k, a in enumerate(self.base.max_pool(dilations))))
        return self.memo(("max", dilations), lambda: reference.max_pool(self.x, dilations=dilations, **self.geometry))

    def boxes(self, count, scale=1 / 16):
        """``count`` boxes ``[batch, x1, y1, x2, y2]`` over the images in turn, each at most a
        quarter of the image's side (a detection head's proposals), integers."""

        def make():
            if self.base is not None:
                return self.repeated_boxes(self.base.boxes(count, scale))
            n, _, h, w = self.sizes
            rng = np.random.default_rng(count)
            side = np.array([w, h]) / scale
            corner = rng.integers(0, side, (count, 2))
            extent = rng.integers(1, side // 4, (count, 2))
            batch = np.arange(count) % n
            return np.concatenate([batch[:, None], corner, corner + extent], axis=1).astype(self.dtype)

        return self.memo(("boxes", count), make)

    def repeated_boxes(self, boxes):
        """The base Data's ``boxes`` again for each repetition, on its images."""
        shifted = [boxes.copy() for _ in range(self.repeats)]
        for k, copy in enumerate(shifted):
            copy[:, 0] += k * self.base.sizes[0]
        return np.concatenate(shifted)

    def boxes_dy(self, sizes, integers: bool = False) -> np.ndarray:
        """A gradient of the outputs of ``sizes[0]`` boxes (repeated Data: the base's again for
        each repetition of its boxes); ``integers``: small integers, whose sums float32 holds
        exactly in any order (a small input gathers hundreds of bins into one element)."""
        if self.base is not None:
            base_sizes = (sizes[0] // self.repeats,) + tuple(sizes[1:])
            return self.memo(("boxes_dy", sizes, integers),
                             lambda: self.tile(self.base.boxes_dy(base_sizes, integers)))
        if integers:
            return self.memo(("boxes_dy", sizes, integers), lambda: np.random.default_rng(sizes[0]).integers(
                -4, 5, sizes).astype(self.dtype))
        return self.memo(("boxes_dy", sizes, integers), lambda: self._rng.standard_normal(sizes).astype(self.dtype))

    def rois(self, count_per_image=8, scale=1 / 16):
        """Boxes ``[batch, x1, y1, x2, y2]`` in image coordinates (``spatial_scale`` maps
        them onto the feature map), integers so that every data type holds them exactly;
        repeated Data: the base's boxes again for each repetition, on its images."""

        def make():
            if self.base is not None:
                return self.repeated_boxes(self.base.rois(count_per_image, scale))
            n, _, h, w = self.sizes
            boxes = []
            for b in range(n):
                for _ in range(count_per_image):
                    x1, x2 = sorted(self._rng.integers(0, round(w / scale), 2))
                    y1, y2 = sorted(self._rng.integers(0, round(h / scale), 2))
                    boxes.append((b, x1, y1, x2, y2))
            return np.array(boxes, dtype=self.dtype)

        return self.memo("rois", make)

    def fractional_out(self) -> tuple:
        return self.sizes[:2] + tuple(int(n * self.case.output_ratio) for n in self.sizes[2:])

    def samples(self) -> np.ndarray:
        """Fractional pooling's samples, one per plane and dimension in [0, 1), of the input's
        type (as PyTorch takes them)."""
        def make():
            if self.base is not None:
                return self.tile(self.base.samples())
            u = self._rng.random(self.sizes[:2] + (self.dims,)).astype(np.float32) * np.float32(0.99)
            return u.astype(self.dtype)

        return self.memo("samples", make)


def _float(array):
    return (array, False)


def _exact(array):
    return (array, True)


def build(op: str, data: Data) -> Optional[Problem]:
    """The Problem of operator ``op`` on ``data``'s case, or None where it does not apply
    (one per Data and operator: its reference results are computed once); on repeated Data,
    the expected outputs are the base Data's, repeated."""
    def make():
        problem = _build(op, data)
        if problem is not None:
            problem.spec["case"] = data.case.name
        if problem is not None and data.base is not None:
            base = build(op, data.base)
            problem.make_expected = lambda: {
                name: (data.tile(array, indices=name == "idx"), exact) for name, (array, exact) in base.expected.items()}
        return problem

    return data.memo(("problem", op), make)


def _build(op: str, data: Data) -> Optional[Problem]:
    g, dims, dt = data.geometry, data.dims, data.dtype
    spec = dict(op=op, dims=dims, dtype=dt.name, x_sizes=data.sizes, **g)

    def forward(make_desc, expected, out_sizes=None, extra=()):
        out_sizes = out_sizes or data.out_sizes()
        return Problem(
            op, {"x": data.x},
            [Step(lambda t: make_desc(t, out_sizes), {"input": "x"}, dict(extra) | {"output": "y"})],
            tuple(["y"] + [name for _, name in extra]), expected, dict(spec, out_sizes=out_sizes),
        )

    if op == "max":
        return forward(lambda t, o: pg.MaxPoolingDesc(input=t["x"], output=t.new(dt, o), **g),
                       lambda: {"y": _exact(data.max_pool()[0])})
    if op == "max_idx":
        return forward(lambda t, o: pg.MaxPooling1Desc(input=t["x"], output=t.new(dt, o),
                                                       output_indices=t.new("uint32", o), **g),
                       lambda: {"y": _exact(data.max_pool()[0]), "idx": _exact(data.max_pool()[1])},
                       extra=(("output_indices", "idx"),))
    if op == "max_dil2":
        dilations = (2,) * dims
        try:
            out = data.out_sizes(dilations)
        except ValueError:  # the dilated window is larger than the padded input
            return None
        problem = forward(lambda t, o: pg.MaxPooling2Desc(input=t["x"], output=t.new(dt, o), dilations=dilations, **g),
                          lambda: {"y": _exact(data.max_pool(dilations)[0])}, out_sizes=out)
        problem.spec["dilations"] = dilations
        return problem
    if op in ("avg", "avg_incl_pad"):
        include = op == "avg_incl_pad"
        problem = forward(lambda t, o: pg.AveragePoolingDesc(input=t["x"], output=t.new(dt, o),
                                                             include_padding=include, **g),
                          lambda: {"y": _float(reference.average_pool(data.x, include_padding=include, **g))})
        problem.spec["include_padding"] = include
        return problem
    if op == "lp2":
        problem = forward(lambda t, o: pg.LpPoolingDesc(input=t["x"], output=t.new(dt, o), p=2, **g),
                          lambda: {"y": _float(reference.lp_pool(data.x, p=2, **g))})
        problem.spec["p"] = 2
        return problem

    out = data.out_sizes()
    spec["out_sizes"] = out
    x_sizes = data.sizes
    grad_step = Step(
        lambda t: pg.MaxPoolingGradDesc(input=t["x"], input_gradient=t["dy"], output_gradient=t.new(dt, x_sizes), **g),
        {"input": "x", "input_gradient": "dy"}, {"output_gradient": "dx"},
    )

    def max_grad():
        return reference.max_pool_grad(data.x, data.dy(out), **g)

    if op == "max_bwd":
        return Problem(op, {"x": data.x, "dy": data.dy(out)}, [grad_step], ("dx",),
                       lambda: {"dx": _float(max_grad())}, spec)
    if op == "max_fwd_bwd":
        forward_step = Step(lambda t: pg.MaxPoolingDesc(input=t["x"], output=t.new(dt, out), **g),
                            {"input": "x"}, {"output": "y"})
        return Problem(op, {"x": data.x, "dy": data.dy(out)},
                       [forward_step, grad_step], ("y", "dx"),
                       lambda: {"y": _exact(data.max_pool()[0]), "dx": _float(max_grad())}, spec)
    if op == "avg_bwd":
        return Problem(
            op, {"dy": data.dy(out)},
            [Step(lambda t: pg.AveragePoolingGradDesc(input_gradient=t["dy"], output_gradient=t.new(dt, x_sizes),
                                                      include_padding=False, **g),
                  {"input_gradient": "dy"}, {"output_gradient": "dx"})],
            ("dx",),
            lambda: {"dx": _float(reference.average_pool_grad(data.dy(out), x_sizes, include_padding=False, **g))},
            dict(spec, include_padding=False),
        )
    if op == "lp2_bwd":
        return Problem(
            op, {"x": data.x, "dy": data.dy(out)},
            [Step(lambda t: pg.LpPoolingGradDesc(input=t["x"], input_gradient=t["dy"],
                                                 output_gradient=t.new(dt, x_sizes), p=2, **g),
                  {"input": "x", "input_gradient": "dy"}, {"output_gradient": "dx"})],
            ("dx",), lambda: {"dx": _float(reference.lp_pool_grad(data.x, data.dy(out), p=2, **g))}, dict(spec, p=2))
    if op == "unpool":
        values, indices = data.max_pool()
        return Problem(
            op, {"v": values, "idx": indices.astype(np.uint32)},
            [Step(lambda t: pg.MaxUnpoolingDesc(input=t["v"], indices=t["idx"], output=t.new(dt, x_sizes)),
                  {"input": "v", "indices": "idx"}, {"output": "z"})],
            ("z",), lambda: {"z": _exact(reference.max_unpool(values, indices, x_sizes))}, spec,
        )
    if op in ("adaptive_max", "adaptive_avg"):
        size = (1,) * dims  # global pooling, as adaptive pooling to 1
        out = x_sizes[:2] + size
        if op == "adaptive_max":
            describe = lambda t: pg.AdaptiveMaxPoolingDesc(input=t["x"], output=t.new(dt, out), output_size=size)  # noqa: E731
            expected = lambda: {"y": _exact(reference.adaptive_max_pool(data.x, size)[0])}  # noqa: E731
        else:
            describe = lambda t: pg.AdaptiveAveragePoolingDesc(input=t["x"], output=t.new(dt, out), output_size=size)  # noqa: E731
            expected = lambda: {"y": _float(reference.adaptive_average_pool(data.x, size))}  # noqa: E731
        return Problem(op, {"x": data.x}, [Step(describe, {"input": "x"}, {"output": "y"})], ("y",), expected,
                       dict(spec, output_size=size, out_sizes=out))
    if op in ("fractional", "fractional_bwd"):
        out, window, samples = data.fractional_out(), g["window_size"], data.samples()
        kind = dt.name   # the samples' type: the windows are computed in it
        fractional_spec = dict(spec, out_sizes=out)
        if op == "fractional":
            return Problem(
                op, {"x": data.x, "samples": samples},
                [Step(lambda t: pg.FractionalMaxPoolingDesc(input=t["x"], samples=t["samples"], output=t.new(dt, out),
                                                            window_size=window),
                      {"input": "x", "samples": "samples"}, {"output": "y"})],
                ("y",), lambda: {"y": _exact(reference.fractional_max_pool(data.x, window, out[2:], samples, kind)[0])},
                fractional_spec, packed=frozenset({"samples"}),
            )
        dy = data.dy(out)
        return Problem(
            op, {"x": data.x, "samples": samples, "dy": dy},
            [Step(lambda t: pg.FractionalMaxPoolingGradDesc(input=t["x"], samples=t["samples"], input_gradient=t["dy"],
                                                            output_gradient=t.new(dt, x_sizes), window_size=window),
                  {"input": "x", "samples": "samples", "input_gradient": "dy"}, {"output_gradient": "dx"})],
            ("dx",), lambda: {"dx": _float(reference.fractional_max_pool_grad(data.x, dy, window, samples, kind))},
            fractional_spec, packed=frozenset({"samples"}),
        )
    if op == "roi":
        rois, pooled, scale = data.rois(), (7, 7), 1 / 16
        out = (len(rois), x_sizes[1]) + pooled
        return Problem(
            op, {"x": data.x, "rois": rois.reshape(1, 1, -1, 5)},
            [Step(lambda t: pg.RoiPoolingDesc(input=t["x"], roi=t["rois"], output=t.new(dt, out),
                                              spatial_scale=scale, pooled_size=pooled),
                  {"input": "x", "roi": "rois"}, {"output": "y"})],
            ("y",), lambda: {"y": _exact(reference.roi_pool(data.x, rois, pooled, scale))},
            dict(spec, pooled_size=pooled, spatial_scale=scale, out_sizes=out), packed=frozenset({"rois"}),
        )
    if op in ("roi_bwd100", "roi_bwd1000"):
        rois, pooled, scale = data.boxes(int(op[7:])), (7, 7), 1 / 16
        out = (len(rois), x_sizes[1]) + pooled
        dy = data.boxes_dy(out, integers=True)
        return Problem(
            op, {"x": data.x, "rois": rois.reshape(1, 1, -1, 5), "dy": dy},
            [Step(lambda t: pg.RoiPoolingGradDesc(input=t["x"], roi=t["rois"], input_gradient=t["dy"],
                                                  output_gradient=t.new(dt, x_sizes), spatial_scale=scale,
                                                  pooled_size=pooled),
                  {"input": "x", "roi": "rois", "input_gradient": "dy"}, {"output_gradient": "dx"})],
            ("dx",), lambda: {"dx": _float(reference.roi_pool_grad(data.x, rois, dy, pooled, scale))},
            dict(spec, pooled_size=pooled, spatial_scale=scale, out_sizes=out), packed=frozenset({"rois"}),
        )
    if op in ("roi_align", "roi_align1000", "roi_align_bwd", "roi_align_bwd1000"):
        import roi_align_reference  # noqa: PLC0415 (tests/roi_align_reference.py)
        boxes, size, scale = data.boxes(1000 if op.endswith("1000") else 100), (7, 7), 1 / 16
        corners = boxes[:, 1:].reshape(1, 1, -1, 4)
        batch = boxes[:, 0].astype(np.uint32).reshape(1, 1, -1)
        out = (len(boxes), x_sizes[1]) + size
        fields = dict(spatial_scale_x=scale, spatial_scale_y=scale, minimum_samples_per_output=2,
                      maximum_samples_per_output=2)
        reference_fields = dict(scale_x=scale, scale_y=scale, min_samples=2, max_samples=2)
        inputs = {"x": data.x, "rois": corners, "batch": batch}
        roles = {"input": "x", "roi": "rois", "batch_indices": "batch"}
        problem_spec = dict(spec, output_size=size, spatial_scale=scale, sampling_ratio=2, out_sizes=out)
        x32 = data.x.astype(np.float32)
        if op in ("roi_align", "roi_align1000"):
            return Problem(
                op, inputs,
                [Step(lambda t: pg.RoiAlign1Desc(t["x"], t["rois"], t["batch"], t.new(dt, out), **fields), roles,
                      {"output": "y"})],
                ("y",), lambda: {"y": _float(roi_align_reference.roi_align(
                    x32, corners[0, 0].astype(np.float32), batch.ravel(), size, **reference_fields))},
                problem_spec, packed=frozenset({"rois", "batch"}))
        dy = data.boxes_dy(out)
        return Problem(
            op, {**inputs, "dy": dy},
            [Step(lambda t: pg.RoiAlignGradDesc(None, t["dy"], t["rois"], t["batch"], t.new(dt, x_sizes), **fields),
                  {"input_gradient": "dy", "roi": "rois", "batch_indices": "batch"}, {"output_gradient": "dx"})],
            ("dx",), lambda: {"dx": _float(roi_align_reference.roi_align_grad(
                x32, corners[0, 0].astype(np.float32), batch.ravel(), dy.astype(np.float32), size,
                **reference_fields))},
            problem_spec, packed=frozenset({"rois", "batch"}))
    if op in QUANTIZED_OPS:
        rounding = QUANTIZED_OPS[op]
        one = (1,) * len(x_sizes)
        # scales as a quantized model's average pooling keeps them (the input's), zero points mid-range
        quantization = {"xs": np.full(one, 0.0392, np.float32), "xz": np.full(one, 128, dt),
                        "ys": np.full(one, 0.0392, np.float32), "yz": np.full(one, 128, dt)}
        arguments = (quantization["xs"], quantization["xz"], quantization["ys"], quantization["yz"])
        return Problem(
            op, {"x": data.x, **quantization},
            [Step(lambda t: pg.QuantizedLinearAveragePoolingDesc(
                input=t["x"], input_scale=t["xs"], input_zero_point=t["xz"], output_scale=t["ys"],
                output_zero_point=t["yz"], output=t.new(dt, out), rounding=rounding, **g),
                {"input": "x", "input_scale": "xs", "input_zero_point": "xz", "output_scale": "ys",
                 "output_zero_point": "yz"}, {"output": "y"})],
            ("y",), lambda: {"y": _exact(reference.quantized_average_pool(data.x, *arguments, rounding=rounding, **g))},
            dict(spec, rounding=rounding, include_padding=False, scale=0.0392, zero_point=128),
            packed=frozenset(quantization),
        )
    raise ValueError(f"unknown operator {op!r}")


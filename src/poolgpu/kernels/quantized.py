"""Quantized average pooling: DirectML's QUANTIZED_LINEAR_AVERAGE_POOLING and the arithmetic of
ONNX Runtime's and PyTorch's quantized average pooling, as accumulators of the forward window
walks (kernels.window) and of the bins walk (integer adaptive average pooling,
kernels.binned): common/quantized_accumulator.wgsl, finished by one operator file per
arithmetic (a ``rounding``).

The float32 rules (DirectML's, ONNX Runtime's QLinearAveragePool) sum the dequantized taps in
the window's order: their accumulator is ordered, so the plane walk (a reduction tree) is
not theirs and long windows chain their parts (window_walk.wgsl's CHAINED).  Scales and zero
points per channel are read by the general walk only (acc_for); per tensor, every walk."""

from __future__ import annotations

import dataclasses

from ..dtypes import DataType
from ..tuning import Tuning
from .binned import _adaptive_bins_pass, _bins_kernel, binned_passes
from .core import Program, Slot
from .registry import register
from .split import Accumulator
from .window import AVERAGE_DIVISOR, _pooling_kernels, average_divisor_constants, walk_for, window_walk_program

# The scales and zero points, bound after the walks' own slots (absent zero points read as 0).
_OPERANDS = ((Slot("xs", False), "input_scale"), (Slot("xz", False), "input_zero_point"),
             (Slot("ys", False), "output_scale"), (Slot("yz", False), "output_zero_point"))
_LIBRARY = AVERAGE_DIVISOR + ("exact_f32.wgsl", "quantized_accumulator.wgsl")


def _accumulator(file: str, ordered: bool = False) -> Accumulator:
    return Accumulator(file, _LIBRARY, "quantized_partials.wgsl", 5, _OPERANDS, ordered)


def _walks(accumulator: Accumulator, *walks: str) -> dict:
    """The accumulator's kernels of ``walks`` (kernels.window's names, "merge" among them;
    "general" with its two outputs per invocation: 8-bit inputs never take 16-bit pairs)."""
    if "general" in walks:
        walks += ("general_two",)
    return {walk: k for walk, k in _pooling_kernels(accumulator).items() if walk in walks}


# rounding -> its accumulator, and its kernels by walk (only those its programs take)
FLOAT_RULES = _accumulator("quantized_avg_pool.wgsl", ordered=True)
GLOBAL_RULE = _accumulator("quantized_global_avg_pool.wgsl")
PYTORCH_RULE = _accumulator("quantized_pytorch_avg_pool.wgsl")
PYTORCH_ADAPTIVE_RULE = _accumulator("quantized_pytorch_adaptive_avg_pool.wgsl")
FLOAT_RULES_POOL = _walks(FLOAT_RULES, "general", "rows", "rows_tail", "rows_any", "channels")   # (chained, not merged)
GLOBAL_RULE_POOL = _walks(GLOBAL_RULE, "general", "channels", "plane", "merge")   # (global windows)
PYTORCH_RULE_POOL = _walks(PYTORCH_RULE, "general", "rows", "rows_tail", "rows_any", "channels", "plane",
                           "merge")
BINS_PYTORCH_ADAPTIVE = _bins_kernel(PYTORCH_ADAPTIVE_RULE)
PYTORCH_ADAPTIVE_MERGE = _walks(PYTORCH_ADAPTIVE_RULE, "merge")["merge"]
_ROUNDINGS = {  # rounding -> (accumulator, kernels by walk, override constants)
    "directml": (FLOAT_RULES, FLOAT_RULES_POOL, {"FLOAT_SUM": True}),
    "onnxruntime": (FLOAT_RULES, FLOAT_RULES_POOL, {"FLOAT_SUM": True, "ZERO_POINT_FIRST": True}),
    "onnxruntime_global": (GLOBAL_RULE, GLOBAL_RULE_POOL, {}),
    "pytorch": (PYTORCH_RULE, PYTORCH_RULE_POOL, {}),
}


def _type_range(data_type: DataType) -> dict:
    low, high = {DataType.INT8: (-128, 127), DataType.UINT8: (0, 255)}[data_type]
    return {"Q_MIN": low, "Q_MAX": high}


def _channel_strides(desc) -> dict:
    """XS_C, XZ_C, YS_C, YZ_C: the element stride along C of each scale and zero point given
    per channel (0: per tensor, or absent)."""
    names = {"input_scale": "XS_C", "input_zero_point": "XZ_C", "output_scale": "YS_C", "output_zero_point": "YZ_C"}
    strides = {}
    for role, name in names.items():
        t = getattr(desc, role)
        strides[name] = t.strides[1] if t is not None and t.sizes[1] > 1 else 0
    return strides


@register("quantized_average_pool")
def quantized_average_pool_program(desc, tuning: Tuning) -> Program:
    accumulator, kernels_by_walk, constants = _ROUNDINGS[desc.rounding]
    constants = {**constants, **_type_range(desc.output.data_type), **_channel_strides(desc),
                 **average_divisor_constants(desc)}
    if desc.rounding == "pytorch":
        constants["VECTOR_CHANNELS"] = desc.vectorized_channels
    per_channel = any(t.sizes[1] > 1 for role, t in desc.input_tensors() if role != "input")
    if per_channel:
        walk = "general"
    else:  # the walks the rule has kernels for (not the plane walk for ordered sums: its lanes add in a tree)
        walk = walk_for(desc, dataclasses.replace(tuning, plane_walk="plane" in kernels_by_walk and tuning.plane_walk,
                                                  walk=tuning.walk if tuning.walk in kernels_by_walk else "auto"))
        if walk not in kernels_by_walk:
            walk = "general"
    operands = tuple(role if getattr(desc, role) is not None else None for _, role in _OPERANDS)
    return window_walk_program(kernels_by_walk, accumulator, desc, ("input", "output", None), tuning, walk=walk,
                               operands=operands, **constants)


def integer_adaptive_average_pool_program(desc, tuning: Tuning) -> Program:
    """Adaptive average pooling of int8 or uint8 values (PyTorch's quantized adaptive average
    of a contiguous input): the bins walk with quantized_pytorch_adaptive_avg_pool.wgsl, which
    reads no scales or zero points."""
    bins_pass, table = _adaptive_bins_pass(desc, tuning.flat_workgroup)
    passes, scratch = binned_passes(BINS_PYTORCH_ADAPTIVE, PYTORCH_ADAPTIVE_RULE, desc, {}, tuning,
                                    merge=PYTORCH_ADAPTIVE_MERGE, constants=_type_range(desc.output.data_type))
    return Program((bins_pass,) + passes, scratch=(("bins", table),) + scratch)

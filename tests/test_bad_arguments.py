"""A seeded fuzz of wrong arguments over every public function: each call draws a valid
case, then replaces some of its arguments by values from a pool of wrong ones (negative,
zero, huge, NaN, infinite, floats, strings, None, bools, wrong lengths, nested lists,
arrays of wrong ranks and types) so that combinations reach deep.  Every call must either
succeed, with the result of tests/reference.py, or raise ``pg.ValidationError`` naming one
of the function's arguments or description fields (a ``TypeError`` naming an argument and
a ``pg.DeviceError`` for a tensor too large for the device are accepted too).  Warnings are
errors: no NumPy or wgpu warning may reach the user.

The table ``FUNCTIONS`` maps a name to (function, valid-case generator, result check,
the names its errors may carry); ``poolgpu.torch``'s functions join it where that module
imports.  ``POOLGPU_FUZZ=1`` runs the long mode (``POOLGPU_FUZZ_EXAMPLES`` calls per
function and adapter, default 2000; ``POOLGPU_FUZZ_SEED`` shifts the seeds); otherwise a
short run.  A failure prints the call to reproduce it.

The fuzz runs in a child process per adapter (``python tests/test_bad_arguments.py BACKEND
ADAPTER NAME...``), so that a process abort (wgpu-native panics on what its validation
refuses at a submission, exit code 134) fails the function it happened in instead of ending
the test run; after an abort a new child goes on with the functions left."""

import json
import math
import os
import re
import subprocess
import sys
import warnings
import zlib

import numpy as np
import pytest
import wgpu

import poolgpu as pg
import reference as R
from poolgpu import onnx as pgo
from poolgpu.onnx._operators import _geometry

FUZZ = os.environ.get("POOLGPU_FUZZ") == "1"
CALLS = int(os.environ.get("POOLGPU_FUZZ_EXAMPLES", 2000)) if FUZZ else 12
SEED = int(os.environ.get("POOLGPU_FUZZ_SEED", 0))
WRONG_RATE = 0.3  # the chance that an argument is replaced by a wrong value

HUGE = [2**31, 2**32, 2**33, 2**63, -2**63, 2**64]
WRONG_SCALARS = [-1, 0, -7, *HUGE, math.nan, math.inf, -math.inf, 1.5, 2.0, -0.0, "2", "", None, True, False,
                 np.int64(-3), np.float32(2), np.float64("nan"), b"2", {"a": 1}, object(), 1j, np.bool_(True)]
WRONG_SEQUENCES = [(), (1,), (2, 2, 2, 2), (2, 2, 2, 2, 2, 2), [[2]], [[2, 2]], (2, None), (2.0, 2), (-1, 2), (0, 1),
                   (2**32, 1), (2**31, 2**31), (2**33, 1), (1, 2**63), (math.nan, 1), (True, 2), ("2", "2"), "22",
                   np.array([2, 2], np.float32), np.array(2), np.zeros((2, 2), np.int64), {2, 3}, range(-1, 1),
                   (np.int64(2), np.uint64(2**64 - 1))]
WRONG = WRONG_SCALARS + WRONG_SEQUENCES


def wrong_arrays(rng):
    """Arrays of wrong ranks, sizes and types, and things that are no arrays."""
    return [rng.standard_normal((2, 2)).astype(np.float32), np.zeros((1, 1, 1, 1, 1, 2), np.float32),
            np.zeros((1, 1, 0), np.float32), rng.standard_normal((1, 2, 4)), np.ones((1, 1, 4), bool),
            np.zeros((1, 1, 3), np.complex64), np.array([[[1, 2], [3, 4]]], dtype=object), [[[1, 2], [3]]],
            np.full((1, 1, 3), np.nan, np.float16), np.float32(1), "x", None, 3, [[[1.5, 2.5]]],
            np.array([[["a", "b"]]])]


# ---------------------------------------------------------------------------------------
# valid cases


def pick(rng, values):
    return values[int(rng.integers(len(values)))]


def values_of(rng, dtype, shape):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        v = rng.standard_normal(shape) * 4
        v[rng.random(shape) < 0.05] = np.nan
        return v.astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dtype)


FLOATS = ("float32", "float16")
QUANTIZED = ("int8", "uint8")
ALL = FLOATS + ("int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8")


def window_case(rng, types, dims=None):
    """A window geometry that is mostly valid: inputs at least the extent, padding below the
    window (none where dilated)."""
    dims = dims or int(rng.integers(1, 4))
    per = lambda lo, hi: tuple(int(rng.integers(lo, hi + 1)) for _ in range(dims))  # noqa: E731
    window, dilations = per(1, 3), per(1, 2)
    pad = lambda: tuple(int(rng.integers(0, min(k, 2))) if d == 1 else 0 for k, d in zip(window, dilations))  # noqa: E731
    spatial = tuple((k - 1) * d + 1 + int(rng.integers(0, 4)) for k, d in zip(window, dilations))
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 3))) + spatial
    return dict(x=values_of(rng, pick(rng, types), shape), window_size=window, strides=per(1, 3),
                start_padding=pad(), end_padding=pad(), dilations=dilations)


def maybe_none(rng, case, names):
    for name in names:
        if rng.random() < 0.2:
            case[name] = None
    return case


def case_max_pool(rng):
    case = maybe_none(rng, window_case(rng, ALL), ("strides", "start_padding", "end_padding", "dilations"))
    case.update(return_indices=pick(rng, [False, True, 0, 1]), indices_type=pick(rng, ["uint32", "uint64", np.uint64]))
    return case


def case_average_pool(rng):
    case = maybe_none(rng, window_case(rng, FLOATS), ("strides", "start_padding", "end_padding", "dilations"))
    case["include_padding"] = pick(rng, [False, True, 0, 1, np.bool_(True)])
    return case


def case_lp_pool(rng):
    case = maybe_none(rng, window_case(rng, FLOATS), ("strides", "start_padding", "end_padding", "dilations"))
    case["p"] = pick(rng, [1, 2, 3, 2.5, np.float32(4), 1.0])
    return case


def _forward_sizes(case):
    try:
        return R.output_sizes(case["x"].shape, case["window_size"], case["strides"], case["start_padding"],
                              case["end_padding"], case["dilations"])
    except ValueError:
        return case["x"].shape


def case_max_pool_grad(rng):
    case = window_case(rng, FLOATS)
    case["dy"] = values_of(rng, case["x"].dtype, _forward_sizes(case))
    return case


def case_average_pool_grad(rng):
    case = window_case(rng, FLOATS)
    x = case.pop("x")
    case.update(dy=values_of(rng, x.dtype, _forward_sizes(dict(case, x=x))), input_sizes=x.shape,
                include_padding=pick(rng, [False, True]))
    return case


def case_max_unpool(rng):
    dims = int(rng.integers(1, 4))
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 3))) + tuple(int(rng.integers(1, 5)) for _ in range(dims))
    out = tuple(int(rng.integers(1, 7)) for _ in range(dims))
    total = math.prod(shape[:2] + out)
    indices = rng.integers(-2, total + 2, shape).astype(pick(rng, ["int64", "uint32", "uint64", "int32"]))
    return dict(x=values_of(rng, pick(rng, ALL), shape), indices=indices,
                output_sizes=pick(rng, [out, shape[:2] + out]))


def case_roi_pool(rng):
    dtype = pick(rng, FLOATS)
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(1, 7)), int(rng.integers(1, 7)))
    rois = rng.uniform(-2, 8, (int(rng.integers(1, 4)), 5))
    rois[:, 0] = rng.integers(-1, shape[0] + 1, len(rois))
    if rng.random() < 0.2:  # corners beyond float16's range, NaN and infinite ones
        rois[rng.integers(len(rois)), rng.integers(5)] = pick(rng, [1e30, -1e30, np.nan, np.inf, 7e4])
    with np.errstate(over="ignore"):
        rois = rois.astype(pick(rng, ["float64", "float32", dtype]))
    return dict(x=values_of(rng, dtype, shape), rois=rois,
                pooled_size=(int(rng.integers(1, 4)), int(rng.integers(1, 4))),
                spatial_scale=pick(rng, [1.0, 0.5, 2, np.float32(0.25), 1e-3]))


def _adaptive_case(rng, types):
    dims = int(rng.integers(1, 4))
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 3))) + tuple(int(rng.integers(1, 7)) for _ in range(dims))
    out = tuple(int(rng.integers(1, 8)) for _ in range(dims))
    return dict(x=values_of(rng, pick(rng, types), shape), output_size=pick(rng, [out, out[0]]))


def case_adaptive_max_pool(rng):
    return dict(_adaptive_case(rng, ALL), return_indices=pick(rng, [False, True]),
                indices_type=pick(rng, ["uint32", "uint64"]))


def case_adaptive_average_pool(rng):
    return _adaptive_case(rng, FLOATS + QUANTIZED)


def case_pooling_output_sizes(rng):
    case = window_case(rng, FLOATS)
    case["input_sizes"] = case.pop("x").shape
    return case


# ---------------------------------------------------------------------------------------
# result checks


def to_numpy(value):
    return value.numpy() if isinstance(value, pg.Tensor) else value


def assert_close(got, expected, dtype):
    got = to_numpy(got)
    assert got.dtype == np.dtype(dtype) and got.shape == expected.shape, (got.dtype, got.shape, expected.shape)
    rtol, atol = (2e-3, 1e-3) if np.dtype(dtype) == np.float16 else (2e-5, 1e-6)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.dtype(dtype)).astype(np.float64),
                                   rtol=rtol, atol=atol, equal_nan=True)


def assert_same(got, expected):
    got = to_numpy(got)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    np.testing.assert_array_equal(got.astype(expected.dtype) if got.dtype != expected.dtype else got, expected)


def host(value):
    return value.numpy() if isinstance(value, pg.Tensor) else np.asarray(value)


def window_args(kw):
    return [kw[k] for k in ("window_size", "strides", "start_padding", "end_padding", "dilations")]


def check_max_pool(kw, result):
    x = host(kw["x"])
    y, idx = R.max_pool(x, *window_args(kw))
    if kw.get("return_indices"):
        result, got_idx = result
        assert_same(got_idx, idx)
    assert_same(result, y)


def check_average_pool(kw, result):
    x = host(kw["x"])
    assert_close(result, R.average_pool(x, *window_args(kw), include_padding=bool(kw["include_padding"])), x.dtype)


def check_lp_pool(kw, result):
    x = host(kw["x"])
    assert_close(result, R.lp_pool(x, *window_args(kw), p=float(kw["p"])), x.dtype)


def check_max_pool_grad(kw, result):
    x = host(kw["x"])
    assert_close(result, R.max_pool_grad(x, host(kw["dy"]), *window_args(kw)), x.dtype)


def check_average_pool_grad(kw, result):
    dy = host(kw["dy"])
    expected = R.average_pool_grad(dy, tuple(kw["input_sizes"]), *window_args(kw),
                                   include_padding=bool(kw["include_padding"]))
    assert_close(result, expected, dy.dtype)


def check_max_unpool(kw, result):
    indices = host(kw["indices"])
    if indices.dtype.kind == "i":  # read as their unsigned bits
        indices = indices.view(np.dtype(indices.dtype.name.replace("int", "uint")))
    assert_same(result, R.max_unpool(host(kw["x"]), indices, tuple(kw["output_sizes"])))


def check_roi_pool(kw, result):
    x = host(kw["x"])
    with np.errstate(all="ignore"):
        rois = host(kw["rois"]).reshape(-1, 5).astype(x.dtype)
    assert_same(result, R.roi_pool(x, rois, tuple(kw["pooled_size"]), float(kw["spatial_scale"])))


def _output_size(kw, x):
    size = kw["output_size"]
    dims = x.ndim - 2
    if np.ndim(size) == 0:
        return (int(size),) * dims
    return tuple(n if s is None else int(s) for s, n in zip(size, x.shape[2:]))  # None keeps the size


def check_adaptive_max_pool(kw, result):
    x = host(kw["x"])
    y, idx = R.adaptive_max_pool(x, _output_size(kw, x))
    if kw.get("return_indices"):
        result, got_idx = result
        assert_same(got_idx, idx)
    assert_same(result, y)


def check_adaptive_average_pool(kw, result):
    x = host(kw["x"])
    if x.dtype.kind in "iu":   # (int8, uint8: PyTorch's quantized rule, exactly)
        assert_same(result, R.integer_adaptive_average_pool(x, _output_size(kw, x)))
        return
    assert_close(result, R.adaptive_average_pool(x, _output_size(kw, x)), x.dtype)


def check_pooling_output_sizes(kw, result):
    assert result == R.output_sizes(*[kw[k] for k in ("input_sizes", "window_size", "strides", "start_padding",
                                                      "end_padding", "dilations")])


# ---------------------------------------------------------------------------------------
# descriptions, TensorDesc and Device.compile


DESC_TENSOR_FIELDS = ("input", "output", "output_indices", "roi", "indices", "input_gradient", "output_gradient",
                      "batch_indices", "output_roi_gradient", "input_scale", "input_zero_point", "output_scale",
                      "output_zero_point")


def wrong_tensor_descs(rng):
    return [pg.TensorDesc("float32", (1, 1, 2, 2, 2)), pg.TensorDesc("int8", (1, 1, 4)),
            pg.TensorDesc("float16", (2, 3, 4, 4)), pg.TensorDesc("uint64", (1, 1, 4, 4)),
            pg.TensorDesc("float32", (1, 1, 4, 4), strides=(0, 0, 0, 0)),
            pg.TensorDesc("float32", (1, 1, 3, 3), strides=(9, 9, 1, 3)), np.zeros((1, 1, 4, 4), np.float32),
            None, "input", 3, (1, 1, 4, 4)]


def desc_case(cls):
    """A valid-case generator for a description class: its tensors as TensorDescs."""
    def case(rng):
        if cls in (pg.RoiPoolingDesc,):
            kw = case_roi_pool(rng)
            x, rois = kw.pop("x"), kw.pop("rois")
            return dict(input=pg.TensorDesc(x.dtype, x.shape), roi=pg.TensorDesc(x.dtype, (1, 1, len(rois), 5)), **kw)
        if cls is pg.MaxUnpoolingDesc:
            kw = case_max_unpool(rng)
            x, out = kw["x"], kw["output_sizes"]
            out = out if len(out) == x.ndim else x.shape[:2] + out
            return dict(input=pg.TensorDesc(x.dtype, x.shape), indices=pg.TensorDesc(pick(rng, ["uint32", "uint64"]), x.shape),
                        output=pg.TensorDesc(x.dtype, out))
        if cls is pg.QuantizedLinearAveragePoolingDesc:
            return quantized_desc_case(rng)
        if cls in (pg.AdaptiveMaxPoolingDesc, pg.AdaptiveAveragePoolingDesc):
            kw = _adaptive_case(rng, ALL if cls is pg.AdaptiveMaxPoolingDesc else FLOATS + QUANTIZED)
            x = kw.pop("x")
            if cls is pg.AdaptiveMaxPoolingDesc and rng.random() < 0.5:
                kw["output_indices"] = pick(rng, ["uint32", pg.DataType.UINT64])
            return dict(input=pg.TensorDesc(x.dtype, x.shape), **kw)
        floats = not issubclass(cls, pg.MaxPoolingDesc) and cls is not pg.MaxPooling1Desc and cls is not pg.MaxPooling2Desc
        kw = window_case(rng, FLOATS if floats else ALL)
        x = kw.pop("x")
        fields = cls.__dataclass_fields__
        if "dilations" not in fields:
            kw.pop("dilations")
        if "include_padding" in fields:
            kw["include_padding"] = pick(rng, [False, True])
        if "p" in fields:
            kw["p"] = pick(rng, [1, 2, 3.5])
        if "output_indices" in fields and rng.random() < 0.5:
            kw["output_indices"] = pick(rng, ["uint32", pg.DataType.UINT64])
        desc = pg.TensorDesc(x.dtype, x.shape)
        if cls is pg.MaxPoolingGradDesc:
            kw["input_gradient"] = pg.TensorDesc(x.dtype, _forward_sizes(dict(kw, x=x, dilations=kw.get("dilations"))))
            return dict(input=desc, **kw)
        if cls is pg.AveragePoolingGradDesc:
            sizes = _forward_sizes(dict(kw, x=x, dilations=kw.get("dilations")))
            return dict(input_gradient=pg.TensorDesc(x.dtype, sizes), output_gradient=desc, **kw)
        return dict(input=desc, **kw)
    return case


def compile_desc(cls):
    """Make the description and compile it on the device (where wgpu would fail)."""
    def call(device, **kw):
        positional = []  # the tensors up to the first left out, the others by name
        for f, field in cls.__dataclass_fields__.items():
            if f not in DESC_TENSOR_FIELDS or field.kw_only:
                continue
            if f not in kw:
                break
            positional.append(kw.pop(f))
        return device.compile(cls(*positional, **kw))
    return call


def case_tensor_desc(rng):
    sizes = tuple(int(rng.integers(1, 5)) for _ in range(int(rng.integers(3, 6))))
    return dict(data_type=pick(rng, ALL), sizes=sizes, strides=pick(rng, [None, pg.TensorDesc("uint8", sizes).strides]),
                total_size_in_bytes=pick(rng, [None, 4096]))


def check_tensor_desc(kw, result):
    assert len(result.strides) == len(result.sizes) and result.total_size_in_bytes >= 4
    assert all(0 <= s <= 2**32 - 1 for s in result.strides) and math.prod(result.sizes) <= 2**32 - 1


# ---------------------------------------------------------------------------------------
# poolgpu.onnx


def _onnx_case(rng, types):
    case = window_case(rng, types)
    dims = case["x"].ndim - 2
    kw = dict(x=case["x"], kernel_shape=list(case["window_size"]), strides=list(case["strides"]))
    kw["auto_pad"] = pick(rng, ["NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"])
    if kw["auto_pad"] == "NOTSET":
        kw["pads"] = [int(rng.integers(0, k)) for k in kw["kernel_shape"]] * 2
        kw["ceil_mode"] = pick(rng, [0, 1, False, True])
    if rng.random() < 0.5:
        kw["dilations"] = [int(rng.integers(1, 3)) for _ in range(dims)]
    return kw


def case_onnx_max_pool(rng):
    return dict(_onnx_case(rng, ALL), storage_order=pick(rng, [0, 1]), return_indices=pick(rng, [False, True]))


def case_onnx_average_pool(rng):
    return dict(_onnx_case(rng, FLOATS), count_include_pad=pick(rng, [0, 1]))


def case_onnx_lp_pool(rng):
    return dict(_onnx_case(rng, FLOATS), p=pick(rng, [1, 2, 3]))


GLOBAL_SHAPES = ((1, 2, 5), (2, 1, 3, 4), (1, 1, 2, 3, 2), (2, 3, 7))  # few: each compiles its pipelines


def case_onnx_global(types):
    return lambda rng: dict(x=values_of(rng, pick(rng, types), pick(rng, GLOBAL_SHAPES)))


def case_onnx_global_lp_pool(rng):
    return dict(case_onnx_global(FLOATS)(rng), p=pick(rng, [1, 2, 3]))


def case_onnx_max_unpool(rng):
    case = window_case(rng, ALL)
    x = case["x"]
    kernel, strides = list(case["window_size"]), list(case["strides"])
    total = math.prod(x.shape[:2]) * math.prod((n - 1) * s + k for n, s, k in zip(x.shape[2:], strides, kernel))
    return dict(x=x, indices=rng.integers(-1, total + 1, x.shape).astype(np.int64), kernel_shape=kernel,
                strides=strides, pads=None)


def case_onnx_max_roi_pool(rng):
    kw = case_roi_pool(rng)
    return dict(x=kw["x"], rois=kw["rois"], pooled_shape=kw["pooled_size"], spatial_scale=kw["spatial_scale"])


def _onnx_window(kw):
    """The core window poolgpu.onnx derives (its own derivation is tested in test_onnx.py)."""
    x = host(kw["x"])
    window, declared_end = _geometry(x.shape[2:], kw["kernel_shape"], kw.get("auto_pad", "NOTSET"),
                                         kw.get("ceil_mode", 0), kw.get("dilations"), kw.get("pads"), kw.get("strides"))
    return x, [window[k] for k in ("window_size", "strides", "start_padding", "end_padding", "dilations")], \
        window["end_padding"] != declared_end


def check_onnx_max_pool(kw, result):
    x, window, _ = _onnx_window(kw)
    y, idx = R.max_pool(x, *window)
    if kw.get("return_indices"):
        result, got_idx = result
        if kw.get("storage_order"):  # column-major: compare through the transposed input
            _, idx = R.max_pool(x.transpose((0, 1) + tuple(range(x.ndim - 1, 1, -1))),
                                *[tuple(reversed(v)) for v in window])
            idx = idx.transpose((0, 1) + tuple(range(x.ndim - 1, 1, -1)))
        assert_same(got_idx, idx)
    assert_same(result, y)


def check_onnx_average_pool(kw, result):
    x, window, ceil_extended = _onnx_window(kw)
    include = bool(kw.get("count_include_pad", 0))
    if include and ceil_extended:  # the divisor leaves ceil_mode's padding out: test_onnx.py checks it
        assert to_numpy(result).shape == R.output_sizes(x.shape, *window)
        return
    assert_close(result, R.average_pool(x, *window, include_padding=include), x.dtype)


def check_onnx_lp_pool(kw, result):
    x, window, _ = _onnx_window(kw)
    assert_close(result, R.lp_pool(x, *window, p=float(kw.get("p", 2))), x.dtype)


def check_onnx_global(reduce):
    def check(kw, result):
        x = host(kw["x"])
        spatial = tuple(range(2, x.ndim))
        if reduce == "max":
            assert_same(result, R.max_pool(x, x.shape[2:])[0])
        elif reduce == "average":
            assert_close(result, R.average_pool(x, x.shape[2:]), x.dtype)
        else:
            assert_close(result, R.lp_pool(x, x.shape[2:], p=float(kw.get("p", 2))), x.dtype)
        assert to_numpy(result).shape == x.shape[:2] + (1,) * len(spatial)
    return check


def check_onnx_max_unpool(kw, result):
    x = host(kw["x"])
    dims = x.ndim - 2
    k, s = kw["kernel_shape"], kw["strides"] or [1] * dims
    pads = kw.get("pads") or [0] * (2 * dims)
    inferred = x.shape[:2] + tuple((n - 1) * st - b - e + kk
                                   for n, st, kk, b, e in zip(x.shape[2:], s, k, pads[:dims], pads[dims:]))
    expected = R.max_unpool(x, host(kw["indices"]).view(np.uint64), inferred)
    if kw.get("output_shape") is not None:
        assert to_numpy(result).shape == tuple(kw["output_shape"])
        return  # the placement for a given output_shape is test_onnx.py's
    assert_same(result, expected)


def check_onnx_max_roi_pool(kw, result):
    check_roi_pool(dict(x=kw["x"], rois=kw["rois"], pooled_size=kw["pooled_shape"],
                        spatial_scale=kw["spatial_scale"]), result)


# ---------------------------------------------------------------------------------------
# Device.wrap: buffers of every kind wgpu refuses (another device, usages missing, mapped,
# an odd size) besides the wrong values of every argument


USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
_OTHER_DEVICES = {}


def _other_device(device):
    """A second wgpu device on the same adapter (made once)."""
    key = (device.backend, device.name)
    if key not in _OTHER_DEVICES:
        _OTHER_DEVICES[key] = pg.Device(backend=device.backend, adapter=device.name).wgpu_device
    return _OTHER_DEVICES[key]


def case_wrap(rng, device):
    dtype = pick(rng, ALL)
    desc = pg.TensorDesc(dtype, tuple(int(rng.integers(1, 4)) for _ in range(int(rng.integers(3, 6)))))
    offset = desc.data_type.size * int(rng.integers(0, 5))
    raw = rng.integers(0, 256, offset + desc.total_size_in_bytes + int(rng.integers(0, 3)) * 4).astype(np.uint8)
    if dtype.startswith("float"):  # finite values: a NaN's payload may change in a shader
        raw[offset:offset + desc.total_size_in_bytes] = np.frombuffer(
            values_of(rng, dtype, (desc.total_size_in_bytes // desc.data_type.size,)).tobytes(), np.uint8)
    usage, owner, mapped = USAGE, device.wgpu_device, False
    wrong = rng.random()
    if wrong < 0.1:
        owner = _other_device(device)
    elif wrong < 0.25:
        usage = USAGE & ~pick(rng, [wgpu.BufferUsage.STORAGE, wgpu.BufferUsage.COPY_SRC, wgpu.BufferUsage.COPY_DST])
    elif wrong < 0.3:
        mapped = True
    elif wrong < 0.35:
        raw = np.concatenate([raw, np.zeros(2, np.uint8)])  # a size no multiple of 4
    if mapped or len(raw) % 4:
        buffer = owner.create_buffer(size=len(raw), usage=usage, mapped_at_creation=mapped)
    else:
        buffer = owner.create_buffer_with_data(data=raw, usage=usage)
    return dict(buffer=buffer, desc=desc, offset=offset, _raw=raw)


case_wrap.takes_device = True


def wrap_call(device, _raw=None, **kw):
    t = device.wrap(**kw)
    # what comes next must work too: a read-back and an op over the tensor
    return t.numpy(), pg.max_pool(t, 1).numpy()


def check_wrap(kw, result):
    desc, offset = kw["desc"], kw["offset"]
    item = desc.data_type.size
    flat = np.frombuffer(kw["_raw"].tobytes()[offset:], desc.data_type.numpy, desc.total_size_in_bytes // item)
    expected = np.lib.stride_tricks.as_strided(flat, desc.sizes, tuple(st * item for st in desc.strides))
    read, pooled = result
    assert_same(read, expected)
    assert_same(pooled, expected)


# ---------------------------------------------------------------------------------------
# the table


WINDOW_NAMES = {"window_size", "strides", "start_padding", "end_padding", "dilations"}
DESC_NAMES = {"input", "output", "output_indices", "input_gradient", "output_gradient", "roi", "indices"}


def functional(function, case, check, *extra):
    """An entry for a function taking ``device=``."""
    return (lambda device, **kw: function(**kw, device=device)), case, check, set(extra) | DESC_NAMES


FUNCTIONS = {
    "max_pool": functional(pg.max_pool, case_max_pool, check_max_pool, *WINDOW_NAMES, "x", "indices_type",
                           "return_indices"),
    "average_pool": functional(pg.average_pool, case_average_pool, check_average_pool, *WINDOW_NAMES, "x",
                               "include_padding"),
    "lp_pool": functional(pg.lp_pool, case_lp_pool, check_lp_pool, *WINDOW_NAMES, "x", "p"),
    "max_pool_grad": functional(pg.max_pool_grad, case_max_pool_grad, check_max_pool_grad, *WINDOW_NAMES, "x", "dy"),
    "average_pool_grad": functional(pg.average_pool_grad, case_average_pool_grad, check_average_pool_grad,
                                    *WINDOW_NAMES, "dy", "input_sizes", "include_padding"),
    "max_unpool": functional(pg.max_unpool, case_max_unpool, check_max_unpool, "x", "indices", "output_sizes"),
    "roi_pool": functional(pg.roi_pool, case_roi_pool, check_roi_pool, "x", "rois", "pooled_size", "spatial_scale"),
    "adaptive_max_pool": functional(pg.adaptive_max_pool, case_adaptive_max_pool, check_adaptive_max_pool, "x",
                                    "output_size", "indices_type", "return_indices"),
    "adaptive_average_pool": functional(pg.adaptive_average_pool, case_adaptive_average_pool,
                                        check_adaptive_average_pool, "x", "output_size"),
    "pooling_output_sizes": ((lambda device, **kw: pg.pooling_output_sizes(**kw)), case_pooling_output_sizes,
                             check_pooling_output_sizes, WINDOW_NAMES | {"input_sizes"}),
    "TensorDesc": ((lambda device, **kw: pg.TensorDesc(**kw)), case_tensor_desc, check_tensor_desc,
                   {"data_type", "sizes", "strides", "total_size_in_bytes"}),
    "onnx.max_pool": functional(pgo.max_pool, case_onnx_max_pool, check_onnx_max_pool, "x", "kernel_shape", "auto_pad",
                                "ceil_mode", "dilations", "pads", "storage_order", "strides", "return_indices"),
    "onnx.average_pool": functional(pgo.average_pool, case_onnx_average_pool, check_onnx_average_pool, "x",
                                    "kernel_shape", "auto_pad", "ceil_mode", "count_include_pad", "dilations", "pads",
                                    "strides"),
    "onnx.lp_pool": functional(pgo.lp_pool, case_onnx_lp_pool, check_onnx_lp_pool, "x", "kernel_shape", "auto_pad",
                               "ceil_mode", "dilations", "pads", "p", "strides"),
    "onnx.global_max_pool": functional(pgo.global_max_pool, case_onnx_global(ALL), check_onnx_global("max"), "x"),
    "onnx.global_average_pool": functional(pgo.global_average_pool, case_onnx_global(FLOATS),
                                           check_onnx_global("average"), "x"),
    "onnx.global_lp_pool": functional(pgo.global_lp_pool, case_onnx_global_lp_pool, check_onnx_global("lp"), "x", "p"),
    "onnx.max_unpool": functional(pgo.max_unpool, case_onnx_max_unpool, check_onnx_max_unpool, "x", "indices",
                                  "kernel_shape", "pads", "strides", "output_shape"),
    "onnx.max_roi_pool": functional(pgo.max_roi_pool, case_onnx_max_roi_pool, check_onnx_max_roi_pool, "x", "rois",
                                    "pooled_shape", "spatial_scale"),
}
FUNCTIONS["Device.wrap"] = (wrap_call, case_wrap, check_wrap, {"buffer", "desc", "offset"})
for _cls in (pg.MaxPoolingDesc, pg.MaxPooling1Desc, pg.MaxPooling2Desc, pg.AveragePoolingDesc, pg.AveragePooling1Desc,
             pg.LpPoolingDesc, pg.LpPooling1Desc, pg.RoiPoolingDesc, pg.AdaptiveMaxPoolingDesc,
             pg.AdaptiveAveragePoolingDesc, pg.MaxPoolingGradDesc, pg.AveragePoolingGradDesc, pg.MaxUnpoolingDesc,
             pg.QuantizedLinearAveragePoolingDesc):
    FUNCTIONS[_cls.__name__] = (compile_desc(_cls), desc_case(_cls), None,
                                set(_cls.__dataclass_fields__) - {"_"} | {"dimension_count"})



# ---------------------------------------------------------------------------------------
# quantized average pooling: pg.quantized_average_pool, its description, poolgpu.onnx's
# QLinear pools (and the integer adaptive average above)

QUANTIZED_NAMES = {"x", "x_scale", "x_zero_point", "y_scale", "y_zero_point", "include_padding", "rounding",
                   "counted_end_padding", "divisor_override", "vectorized_channels"}


def _quantization(rng, x, kind):
    """A scale or zero point for ``x`` in one of its forms (arrays shaped as their TensorDescs,
    so that the fuzz may upload them)."""
    c = x.shape[1]
    per_channel = (1, c) + (1,) * (x.ndim - 2)
    if kind == "scale":
        return pick(rng, [0.05, np.float32(0.3), 1, np.full(per_channel, 0.1, np.float32),
                          np.full((1,) * x.ndim, 0.7, np.float32)])
    info = np.iinfo(x.dtype)
    return pick(rng, [None, 0, 3, int(info.max), np.full(per_channel, 1, x.dtype), np.full((1,) * x.ndim, 2, x.dtype)])


def case_quantized_average_pool(rng):
    case = window_case(rng, QUANTIZED)
    x = case["x"]
    case.update(x_scale=_quantization(rng, x, "scale"), x_zero_point=_quantization(rng, x, "zero"),
                y_scale=_quantization(rng, x, "scale"), y_zero_point=_quantization(rng, x, "zero"),
                include_padding=pick(rng, [False, True, 0, 1]),
                rounding=pick(rng, ["directml", "onnxruntime", "pytorch", "onnxruntime_global"]))
    for name in ("strides", "start_padding", "end_padding", "dilations", "include_padding", "rounding"):
        if rng.random() < 0.5:   # (left to their defaults: fewer arguments for the fuzz to spoil)
            del case[name]
    return case


def check_quantized_average_pool(kw, result):
    operands = [None if kw[n] is None else host(kw[n]) for n in ("x_scale", "x_zero_point", "y_scale", "y_zero_point")]
    window = [kw.get(k) for k in ("window_size", "strides", "start_padding", "end_padding", "dilations")]
    expected = R.quantized_average_pool(host(kw["x"]), *operands, *window,
                                        include_padding=bool(kw.get("include_padding", False)),
                                        rounding=kw.get("rounding", "directml"))
    assert_same(result, expected)


def quantized_desc_case(rng):
    kw = case_quantized_average_pool(rng)
    x = kw.pop("x")
    descs = {}
    for name, field in (("x_scale", "input_scale"), ("x_zero_point", "input_zero_point"), ("y_scale", "output_scale"),
                        ("y_zero_point", "output_zero_point")):
        value = kw.pop(name)
        if value is not None:   # (left out: a zero point of 0)
            descs[field] = pg.TensorDesc(np.asarray(value).dtype if np.ndim(value) else (
                "float32" if "scale" in name else x.dtype), np.shape(value) or (1,) * x.ndim)
    return dict(input=pg.TensorDesc(x.dtype, x.shape), **descs, **kw)


def case_qlinear_average_pool(rng):
    dims = int(rng.integers(1, 4))
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4))) + tuple(int(rng.integers(1, 7)) for _ in range(dims))
    x = values_of(rng, pick(rng, QUANTIZED), shape)
    kernel = tuple(int(rng.integers(1, n + 1)) for n in shape[2:])
    return dict(x=x, x_scale=pick(rng, [0.05, np.float32(0.2)]), x_zero_point=pick(rng, [None, 1, np.array(2, x.dtype)]),
                y_scale=pick(rng, [0.05, 0.3]), y_zero_point=pick(rng, [None, 0, 5]),
                kernel_shape=pick(rng, [kernel, shape[2:]]), strides=pick(rng, [None, (1,) * dims, (2,) * dims]),
                pads=pick(rng, [None, (0,) * 2 * dims, tuple(k // 2 for k in kernel) * 2]),
                ceil_mode=pick(rng, [0, 1]), count_include_pad=pick(rng, [0, 1]), auto_pad="NOTSET")


def check_qlinear_average_pool(kw, result):
    x = host(kw["x"])
    window, _ = _geometry(x.shape[2:], kw["kernel_shape"], kw["auto_pad"], kw["ceil_mode"], None, kw["pads"],
                          kw["strides"])
    whole = tuple(window["window_size"]) == x.shape[2:] and not any(window["start_padding"] + window["end_padding"])
    operands = [None if kw[n] is None else np.asarray(kw[n]) for n in ("x_scale", "x_zero_point", "y_scale",
                                                                        "y_zero_point")]
    if whole:   # ONNX Runtime's global average
        expected = R.quantized_average_pool(x, *operands, x.shape[2:], rounding="onnxruntime_global")
    else:
        expected = R.quantized_average_pool(x, *operands, window["window_size"], window["strides"],
                                            window["start_padding"], window["end_padding"],
                                            include_padding=bool(kw["count_include_pad"]), rounding="onnxruntime")
    assert_same(result, expected)


def case_qlinear_global_average_pool(rng):
    kw = case_qlinear_average_pool(rng)
    return {k: kw[k] for k in ("x", "x_scale", "x_zero_point", "y_scale", "y_zero_point")}


def check_qlinear_global_average_pool(kw, result):
    x = host(kw["x"])
    operands = [None if kw[n] is None else np.asarray(kw[n]) for n in ("x_scale", "x_zero_point", "y_scale",
                                                                        "y_zero_point")]
    assert_same(result, R.quantized_average_pool(x, *operands, x.shape[2:], rounding="onnxruntime_global"))


def quantized_torch_entries():
    """poolgpu.torch's functions on quantized tensors, against PyTorch's quantized ops."""
    try:
        import torch
        import poolgpu.torch as pgt
    except ImportError:
        return {}
    F = torch.nn.functional

    def tensor(rng):
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 10)), int(rng.integers(2, 8)), int(rng.integers(2, 8)))
        dtype = pick(rng, [torch.quint8, torch.qint8])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = torch.quantize_per_tensor(torch.from_numpy(rng.standard_normal(shape).astype(np.float32)),
                                          float(rng.uniform(0.01, 1)), int(rng.integers(0, 100)), dtype)
        return q.contiguous(memory_format=torch.channels_last) if rng.random() < 0.3 else q

    def window(rng):
        k = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        return dict(kernel_size=pick(rng, [k, k[0]]), stride=pick(rng, [None, (1, 2)]),
                    padding=pick(rng, [0, min(k) // 2]), ceil_mode=pick(rng, [False, True]))

    cases = {
        "max_pool2d": lambda rng: dict(input=tensor(rng), **window(rng), dilation=pick(rng, [1, 2])),
        "avg_pool2d": lambda rng: dict(input=tensor(rng), **window(rng), count_include_pad=pick(rng, [False, True]),
                                       divisor_override=pick(rng, [None, 3, -2])),
        "adaptive_avg_pool2d": lambda rng: dict(input=tensor(rng), output_size=pick(rng, [1, (2, None), (3, 2)])),
    }

    def reference(name):
        def check(kw, result):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    expected = getattr(F, name)(**kw)
                except Exception as exc:  # noqa: BLE001
                    raise AssertionError(f"poolgpu.torch accepted what PyTorch refuses: {exc}")
            assert torch.equal(result.int_repr(), expected.int_repr())
            assert (result.q_scale(), result.q_zero_point()) == (expected.q_scale(), expected.q_zero_point())
        return check

    names = {"input", "kernel_size", "stride", "padding", "dilation", "ceil_mode", "count_include_pad",
             "divisor_override", "output_size", "return_indices"}
    return {f"torch.{name}.quantized": ((lambda device, _f=getattr(pgt, name), **kw: _f(**kw, device=device)),
                                        case, reference(name), names | DESC_NAMES | WINDOW_NAMES)
            for name, case in cases.items()}


def quantized_entries():
    onnx_names = {"x", "x_scale", "x_zero_point", "y_scale", "y_zero_point", "kernel_shape", "auto_pad", "ceil_mode",
                  "channels_last", "count_include_pad", "pads", "strides"}
    return {**quantized_torch_entries(),
        "quantized_average_pool": functional(pg.quantized_average_pool, case_quantized_average_pool,
                                             check_quantized_average_pool, *WINDOW_NAMES, *QUANTIZED_NAMES),
        "onnx.qlinear_average_pool": functional(pgo.qlinear_average_pool, case_qlinear_average_pool,
                                                check_qlinear_average_pool, *onnx_names),
        "onnx.qlinear_global_average_pool": functional(pgo.qlinear_global_average_pool,
                                                       case_qlinear_global_average_pool,
                                                       check_qlinear_global_average_pool, *onnx_names),
    }


FUNCTIONS.update(quantized_entries())


# ---------------------------------------------------------------------------------------
# poolgpu.torch: its functions join the table where the module imports; PyTorch (and
# torchvision for roi_pool) is the reference.

TORCH_NAMES = {"input", "kernel_size", "stride", "padding", "dilation", "ceil_mode", "count_include_pad",
               "divisor_override", "norm_type", "output_size", "return_indices", "indices", "boxes", "spatial_scale"}


def torch_entries():
    try:
        import torch
        import poolgpu.torch as pgt
    except ImportError:
        return {}
    F = torch.nn.functional

    def tensor(rng, dims, low=2):
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 3))) + tuple(int(rng.integers(low, 7)) for _ in range(dims))
        return torch.from_numpy(rng.standard_normal(shape).astype(np.float32))

    def geometry(rng, dims, dilation=True):
        k = tuple(int(rng.integers(1, 4)) for _ in range(dims))
        kw = dict(kernel_size=pick(rng, [k, k[0]]), stride=pick(rng, [None, tuple(int(rng.integers(1, 3)) for _ in k)]),
                  padding=pick(rng, [0, min(k) // 2]), ceil_mode=pick(rng, [False, True]))
        if dilation:
            kw["dilation"] = pick(rng, [1, 2])
        return kw

    def reference(name):
        def check(kw, result):
            # poolgpu.torch takes NumPy arrays as torch tensors (NumPy out) and integer inputs
            # in the max family, which PyTorch's CPU kernels lack: they pool exactly in float64
            kw = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
            dtype = kw["input"].dtype if isinstance(kw.get("input"), torch.Tensor) else None
            if dtype is not None and not dtype.is_floating_point:
                kw["input"] = kw["input"].double()
            with torch.no_grad():
                try:
                    expected = getattr(F, name)(**kw)
                except Exception as exc:  # noqa: BLE001
                    raise AssertionError(f"poolgpu.torch accepted what PyTorch refuses: {exc}")
            expected = expected if isinstance(expected, tuple) else (expected,)
            if dtype is not None and not dtype.is_floating_point:
                expected = (expected[0].to(dtype),) + expected[1:]
            result = result if isinstance(result, tuple) else (result,)
            for g, e in zip(result, expected):
                np.testing.assert_allclose(np.asarray(g, np.float64), e.numpy().astype(np.float64), rtol=1e-5, atol=1e-6,
                                           equal_nan=True)
        return check

    entries = {}
    for d in (1, 2, 3):
        def max_case(rng, d=d):
            return dict(input=tensor(rng, d), **geometry(rng, d), return_indices=pick(rng, [False, True]))

        def avg_case(rng, d=d):
            kw = dict(input=tensor(rng, d), **geometry(rng, d, dilation=False), count_include_pad=pick(rng, [False, True]))
            if d > 1:
                kw["divisor_override"] = pick(rng, [None, 1, 3])
            return kw

        def lp_case(rng, d=d):
            kw = geometry(rng, d, dilation=False)
            kw.pop("padding")
            return dict(input=tensor(rng, d).abs(), norm_type=pick(rng, [1, 2, 4]), **kw)

        def adaptive_case(rng, d=d, indices=False):
            size = tuple(pick(rng, [None, int(rng.integers(1, 8))]) for _ in range(d))
            kw = dict(input=tensor(rng, d, 1), output_size=pick(rng, [size, int(rng.integers(1, 8))]))
            if indices:
                kw["return_indices"] = pick(rng, [False, True])
            return kw

        def unpool_case(rng, d=d):
            x = tensor(rng, d)
            k = int(rng.integers(1, 3))
            y, i = getattr(F, f"max_pool{d}d")(x, k, return_indices=True)
            return dict(input=y, indices=i, kernel_size=k, stride=None, padding=0,
                        output_size=pick(rng, [None, tuple(x.shape[2:])]))

        for name, case in ((f"max_pool{d}d", max_case), (f"avg_pool{d}d", avg_case), (f"lp_pool{d}d", lp_case),
                           (f"adaptive_max_pool{d}d", lambda rng, d=d: adaptive_case(rng, d, True)),
                           (f"adaptive_avg_pool{d}d", adaptive_case), (f"max_unpool{d}d", unpool_case)):
            if hasattr(pgt, name) and hasattr(F, name):
                entries[f"torch.{name}"] = ((lambda device, _f=getattr(pgt, name), **kw: _f(**kw, device=device)),
                                            case, reference(name), TORCH_NAMES | DESC_NAMES | WINDOW_NAMES)
    return entries


FUNCTIONS.update(torch_entries())


# ---------------------------------------------------------------------------------------
# ROI align: pg.roi_align, pg.roi_align_grad, poolgpu.onnx.roi_align, its descriptions and
# poolgpu.torch's roi_align and ps_roi_align, against tests/roi_align_reference.py.

import roi_align_reference as RA  # noqa: E402


def case_roi_align(rng, gradient=False):
    dtype = pick(rng, FLOATS)
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(1, 7)), int(rng.integers(1, 7)))
    count = int(rng.integers(1, 4))
    rois = rng.uniform(-2, 8, (count, 4))
    if rng.random() < 0.2:  # corners beyond float16's range, NaN and infinite ones
        rois[rng.integers(count), rng.integers(4)] = pick(rng, [1e30, -1e30, np.nan, np.inf, 7e4])
    with np.errstate(over="ignore"):
        rois = rois.astype(pick(rng, ["float64", "float32", dtype]))
    size = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
    kw = dict(x=values_of(rng, dtype, shape), rois=rois,
              batch_indices=rng.integers(0, shape[0], count).astype(pick(rng, ["int64", "uint32", "int32"])),
              output_size=pick(rng, [size, size[0]]), spatial_scale=pick(rng, [1.0, 0.5, 2, np.float32(0.25)]),
              sampling_ratio=pick(rng, [-1, 0, 1, 2]), mode=pick(rng, ["avg", "max"]), aligned=pick(rng, [True, False]))
    if gradient:
        out = size if isinstance(kw["output_size"], tuple) else (size[0], size[0])
        kw["dy"] = values_of(rng, dtype, (count, shape[1]) + out)
    return kw


def _some_defaults(rng, kw, defaults):
    """``kw`` with some of its optional arguments left out (their defaults are ``defaults``)."""
    for name in defaults:
        if rng.random() < 0.7:
            kw.pop(name)
    return kw


ROI_ALIGN_DEFAULTS = dict(spatial_scale=1.0, sampling_ratio=0, mode="avg", aligned=True)
ONNX_ROI_ALIGN_DEFAULTS = dict(mode="avg", output_height=1, output_width=1, sampling_ratio=0, spatial_scale=1.0,
                               coordinate_transformation_mode="half_pixel")


def _roi_align_reference(kw, gradient=False):
    x = host(kw["x"]).astype(np.float32)
    with np.errstate(all="ignore"):
        rois = host(kw["rois"]).reshape(-1, 4).astype(host(kw["x"]).dtype).astype(np.float32)
    size = kw["output_size"]
    size = tuple(size) if np.ndim(size) else (size, size)
    kw = {**ROI_ALIGN_DEFAULTS, **kw}
    ratio, aligned = int(kw["sampling_ratio"]), bool(kw["aligned"])
    fields = dict(scale_x=float(np.float32(kw["spatial_scale"])), scale_y=float(np.float32(kw["spatial_scale"])),
                  input_offset=0.5 if aligned else 0.0, min_samples=max(ratio, 0),
                  max_samples=ratio if ratio > 0 else 2**32 - 1, min_region=None if aligned else 1.0)
    batch = host(kw["batch_indices"]).reshape(-1)
    reduction = "max" if kw["mode"] == "max" else "average"
    if gradient:
        return RA.roi_align_grad(x, rois, batch, host(kw["dy"]).astype(np.float32), size, reduction, **fields)
    return RA.roi_align(x, rois, batch, size, reduction, **fields)


def check_roi_align(kw, result, gradient=False):
    got = to_numpy(result)
    want = _roi_align_reference(kw, gradient)
    assert got.shape == want.shape, (got.shape, want.shape)
    half = got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want.astype(got.dtype).astype(np.float64),
                               rtol=1e-2 if half else 1e-5, atol=1e-2 if half else 1e-5, equal_nan=True)


def case_onnx_roi_align(rng):
    kw = case_roi_align(rng)
    size = kw.pop("output_size")
    size = size if isinstance(size, tuple) else (size, size)
    ratio = kw.pop("sampling_ratio")
    kw.update(output_height=size[0], output_width=size[1], sampling_ratio=max(ratio, 0),
              coordinate_transformation_mode="half_pixel" if kw.pop("aligned") else "output_half_pixel")
    return _some_defaults(rng, kw, ONNX_ROI_ALIGN_DEFAULTS)


def check_onnx_roi_align(kw, result):
    kw = {**ONNX_ROI_ALIGN_DEFAULTS, **kw}
    got = to_numpy(result)
    with np.errstate(all="ignore"):
        rois = host(kw["rois"]).reshape(-1, 4).astype(host(kw["x"]).dtype).astype(np.float32)
    want = RA.onnx_roi_align(host(kw["x"]).astype(np.float32), rois, host(kw["batch_indices"]).reshape(-1),
                             int(kw["output_height"]), int(kw["output_width"]), int(kw["sampling_ratio"]),
                             float(np.float32(kw["spatial_scale"])), kw["mode"], kw["coordinate_transformation_mode"])
    half = got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want.astype(got.dtype).astype(np.float64),
                               rtol=1e-2 if half else 1e-5, atol=1e-2 if half else 1e-5, equal_nan=True)


def roi_align_desc_case(cls):
    def case(rng):
        kw = case_roi_align(rng, gradient=cls is pg.RoiAlignGradDesc)
        x, rois, batch = kw["x"], kw["rois"], kw["batch_indices"]
        fields = dict(input=pg.TensorDesc(x.dtype, x.shape), roi=pg.TensorDesc(x.dtype, (1, 1, len(rois), 4)),
                      batch_indices=pg.TensorDesc(batch.dtype, (1, 1, len(batch))))
        if cls is pg.RoiAlignGradDesc:
            fields["input_gradient"] = pg.TensorDesc(x.dtype, kw["dy"].shape)
        else:
            fields["output_size"] = kw["output_size"]
        optional = dict(reduction_function=pick(rng, ["average", "max"]),
                        interpolation_mode=pick(rng, ["linear", "nearest_neighbor"]),
                        spatial_scale_x=kw["spatial_scale"], minimum_samples_per_output=pick(rng, [0, 1, 2]),
                        maximum_samples_per_output=pick(rng, [2, 3, 2**32 - 1]))
        if cls is not pg.RoiAlignGradDesc:
            optional["out_of_bounds_input_value"] = pick(rng, [0.0, -1.5])
        if cls is not pg.RoiAlignDesc:
            optional.update(input_pixel_offset=pick(rng, [0.5, 0.0]), align_regions_to_corners=pick(rng, [False, True]))
        for name in rng.permutation(sorted(optional))[:2]:   # (few fields: some calls stay valid)
            fields[name] = optional[name]
        return fields
    return case


FUNCTIONS.update({
    "roi_align": functional(pg.roi_align, lambda rng: _some_defaults(rng, case_roi_align(rng), ROI_ALIGN_DEFAULTS),
                            check_roi_align, "x", "rois", "batch_indices",
                            "output_size", "spatial_scale", "sampling_ratio", "mode", "aligned"),
    "roi_align_grad": functional(pg.roi_align_grad,
                                 lambda rng: _some_defaults(rng, case_roi_align(rng, True), ROI_ALIGN_DEFAULTS),
                                 lambda kw, result: check_roi_align(kw, result, True), "x", "rois", "batch_indices",
                                 "dy", "output_size", "spatial_scale", "sampling_ratio", "mode", "aligned",
                                 "input_sizes"),
    "onnx.roi_align": functional(pgo.roi_align, case_onnx_roi_align, check_onnx_roi_align, "X", "x", "rois",
                                 "batch_indices", "mode", "output_height", "output_width", "sampling_ratio",
                                 "spatial_scale", "coordinate_transformation_mode"),
})
for _cls in (pg.RoiAlignDesc, pg.RoiAlign1Desc, pg.RoiAlignGradDesc):
    FUNCTIONS[_cls.__name__] = (compile_desc(_cls), roi_align_desc_case(_cls), None,
                                set(_cls.__dataclass_fields__) - {"_"})


def torch_roi_align_entries():
    try:
        import torch
        import poolgpu.torch as pgt
    except ImportError:
        return {}

    def case(rng, ps=False):
        kw = case_roi_align(rng)
        x = torch.from_numpy(kw["x"].astype(np.float32))
        boxes = torch.from_numpy(np.concatenate([kw["batch_indices"][:, None], kw["rois"]], axis=1).astype(np.float32))
        size = kw["output_size"]
        if ps:
            bins = size[0] * size[1] if isinstance(size, tuple) else size * size
            x = torch.from_numpy(rng.standard_normal((x.shape[0], bins * int(rng.integers(1, 3))) + tuple(x.shape[2:]))
                                 .astype(np.float32))
            return dict(input=x, boxes=boxes, output_size=size, spatial_scale=kw["spatial_scale"],
                        sampling_ratio=kw["sampling_ratio"])
        return dict(input=x, boxes=boxes, output_size=size, spatial_scale=kw["spatial_scale"],
                    sampling_ratio=kw["sampling_ratio"], aligned=kw["aligned"])

    def check(kw, result):
        boxes = np.asarray(kw["boxes"], np.float32)
        size = kw["output_size"]
        size = tuple(size) if np.ndim(size) else (size, size)
        want = RA.torchvision_roi_align(np.asarray(kw["input"]), boxes, size, float(kw["spatial_scale"]),
                                        int(kw["sampling_ratio"]), bool(kw["aligned"]))
        np.testing.assert_allclose(np.asarray(result), want, rtol=1e-5, atol=1e-6, equal_nan=True)

    def ps_pool_case(rng):
        kw = case(rng, True)
        del kw["sampling_ratio"]
        return kw

    def ps_pool_check(kw, result):
        size = kw["output_size"]
        size = tuple(size) if np.ndim(size) else (size, size)
        want = R.torchvision_ps_roi_pool(np.asarray(kw["input"]), np.asarray(kw["boxes"], np.float32), size,
                                                 float(kw["spatial_scale"]))
        np.testing.assert_array_equal(np.asarray(result), want)

    names = TORCH_NAMES | DESC_NAMES | {"sampling_ratio", "aligned", "batch_indices"}
    return {"torch.roi_align": ((lambda device, **kw: pgt.roi_align(**kw, device=device)), case, check, names),
            "torch.ps_roi_align": ((lambda device, **kw: pgt.ps_roi_align(**kw, device=device)),
                                   lambda rng: case(rng, True), None, names),
            "torch.ps_roi_pool": ((lambda device, **kw: pgt.ps_roi_pool(**kw, device=device)), ps_pool_case,
                                  ps_pool_check, names)}


FUNCTIONS.update(torch_roi_align_entries())


# ---------------------------------------------------------------------------------------
# the fuzz


def mutate(rng, case, device):
    """Replace some arguments of a valid case by wrong values; arrays sometimes go as
    Tensors (uploaded valid ones) to reach the Tensor paths."""
    kw = dict(case)
    for name, value in case.items():
        if name.startswith("_"):  # what the check needs, no argument
            continue
        if rng.random() < WRONG_RATE:
            if isinstance(value, np.ndarray) and rng.random() < 0.6:
                kw[name] = pick(rng, wrong_arrays(rng))
            elif isinstance(value, pg.TensorDesc) and rng.random() < 0.6:
                kw[name] = pick(rng, wrong_tensor_descs(rng))
            else:
                kw[name] = pick(rng, WRONG)
        elif isinstance(value, np.ndarray) and rng.random() < 0.15:
            # rois go as the {1, 1, R, 5} tensor of the input's type that roi_pool takes
            if name == "rois":
                with np.errstate(over="ignore"):
                    value = value.reshape(1, 1, -1, value.shape[-1]).astype(case["x"].dtype)
            if name == "batch_indices":   # (ROI align's: a {1, 1, R} tensor)
                value = value.reshape(1, 1, -1)
            if 3 <= value.ndim <= 5:   # (a tensor: scalars such as quantization scales stay arrays)
                kw[name] = device.upload(value)
    return kw


def accepted_error(exc, names) -> bool:
    if isinstance(exc, pg.ValidationError):
        return bool(exc.field) and exc.field.split(".")[0] in names and len(str(exc)) > len(exc.field) + 5
    if isinstance(exc, TypeError):
        return any(name in str(exc) for name in names)
    if isinstance(exc, pg.DeviceError):  # a valid request too large for this device
        return "exceeds" in str(exc) or "too large" in str(exc) or "memory" in str(exc)
    return False


def fuzz(device, name):
    """The fuzz of one function on one device: raises AssertionError on its first failure."""
    call, case, check, names = FUNCTIONS[name]
    rng = np.random.default_rng([zlib.crc32(name.encode()), SEED])
    outcomes = {"ok": 0, "refused": 0}
    for i in range(4 * CALLS):  # CALLS calls, and more until both branches are reached
        if i >= CALLS and outcomes["ok"] and outcomes["refused"]:
            break
        kw = mutate(rng, case(rng, device) if getattr(case, "takes_device", False) else case(rng), device)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                result = call(device, **kw)
        except Exception as exc:  # noqa: BLE001 - every other exception is the failure
            if not accepted_error(exc, names):
                raise AssertionError(f"{name} call {i} (seed {SEED}): {name}(**{kw!r}) raised "
                                     f"{type(exc).__name__}: {exc}") from exc
            outcomes["refused"] += 1
            continue
        outcomes["ok"] += 1
        if check is not None:
            try:
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")  # the reference's own arithmetic
                    check(kw, result)
            except AssertionError as exc:
                raise AssertionError(f"{name} call {i} (seed {SEED}): {name}(**{kw!r}) gave a wrong result: {exc}")
    # both branches must be reached, or the fuzz tests nothing
    assert outcomes["ok"] and outcomes["refused"], f"{name}: {outcomes}"


def run_in_child(backend, adapter, names):
    """The fuzz of each of `names` in child processes: name -> None (passed) or what failed.
    A child that ends abnormally fails the function it was in; a new one goes on."""
    results, left = {}, list(names)
    while left:
        command = [sys.executable, __file__, backend, adapter, *left]
        out = subprocess.run(command, capture_output=True, text=True, cwd=os.path.dirname(__file__))
        for line in out.stdout.splitlines():
            if line.startswith("FUZZ "):
                name, failure = json.loads(line[5:])
                results[name] = failure
        left = [n for n in left if n not in results]
        if left and out.returncode == 0:
            raise RuntimeError(f"the fuzz child ended without running {left}: {out.stderr[-3000:]}")
        if left:  # the first function left is the one the process ended in
            why = "\n".join(line for line in out.stderr.splitlines()  # the message, not the stack frames
                            if not re.match(r"\s+(\d+: |at )", line))
            results[left.pop(0)] = (f"the process ended with exit code {out.returncode} (an abort: wgpu refused "
                                    f"something no check caught) while fuzzing it:\n{why[-3000:]}")
    return results


_CHILD_RESULTS = {}  # (backend, adapter name) -> {function name: None or failure}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_bad_arguments_are_refused_or_computed_right(device, name, request):
    key = (device.backend, device.name)
    if key not in _CHILD_RESULTS:  # one child for every function this run selects on this adapter
        selected = [item.callspec.params["name"] for item in request.session.items
                    if getattr(item, "originalname", None) == request.node.originalname
                    and (item.callspec.params["device"] or {}).get("name") == device.name
                    and item.callspec.params["device"]["backend"] == device.backend]
        _CHILD_RESULTS[key] = run_in_child(device.backend, device.name, selected)
    if name not in _CHILD_RESULTS[key]:
        _CHILD_RESULTS[key].update(run_in_child(device.backend, device.name, [name]))
    failure = _CHILD_RESULTS[key][name]
    if failure is not None:
        pytest.fail(failure, pytrace=False)


if __name__ == "__main__":  # the child: python test_bad_arguments.py BACKEND ADAPTER NAME...
    _device = pg.Device(backend=sys.argv[1], adapter=sys.argv[2])
    for _name in sys.argv[3:]:
        try:
            fuzz(_device, _name)
        except AssertionError as _exc:
            _failure = str(_exc)
        else:
            _failure = None
        print("FUZZ " + json.dumps([_name, _failure]), flush=True)

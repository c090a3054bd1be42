"""Quantized average pooling (QUANTIZED_LINEAR_AVERAGE_POOLING) and integer adaptive
average pooling on every adapter: bit for bit against the NumPy reference (tests/reference.py,
written from docs/semantics.md), under every rounding rule, per tensor and per channel,
every layout, long windows (chained and merged parts), and the arithmetic that makes the
rules differ."""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import poolgpu as pg
import reference
from helpers import assert_canaries_intact, canary_tensor, layout_strides, same_bits, tuned_for, upload

INT8, UINT8 = pg.DataType.INT8, pg.DataType.UINT8
ROUNDINGS = ("directml", "onnxruntime", "onnxruntime_global", "pytorch")
GPU_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SPLITTING = {"cpu": dataclasses.replace(pg.Tuning.for_cpu(), loop_budget=256, plane_part=1024),
             "gpu": dataclasses.replace(pg.Tuning.for_gpu(), loop_budget=256, plane_part=1024)}


def _operand(rng, kind, data_type, channels, rank, per_channel, equal_to=None):
    """A scale or zero point array shaped for its TensorDesc ({1, C, 1...} or all 1)."""
    shape = (1, channels if per_channel else 1) + (1,) * (rank - 2)
    if kind == "scale":
        if equal_to is not None:
            return np.broadcast_to(equal_to[:, :1] if not per_channel else equal_to, shape).astype(np.float32).copy()
        return (rng.uniform(0.002, 2, shape)).astype(np.float32)
    info = np.iinfo(data_type.numpy)
    return rng.integers(info.min, info.max + 1, shape).astype(data_type.numpy)


def make_case(case):
    """(x, operands by role (None: absent), the reference's keyword arguments) of a drawn case."""
    rng = np.random.default_rng(case["seed"])
    data_type = case["data_type"]
    info = np.iinfo(data_type.numpy)
    x = rng.integers(info.min, info.max + 1, case["sizes"]).astype(data_type.numpy)
    channels, rank = x.shape[1], x.ndim
    xs = _operand(rng, "scale", data_type, channels, rank, case["per_channel"][0])
    # equal scales (as PyTorch's and most quantized models' average pooling keep) make ties common
    ys = _operand(rng, "scale", data_type, channels, rank, case["per_channel"][2],
                  equal_to=xs if case["equal_scales"] else None)
    zeros = [_operand(rng, "zero", data_type, channels, rank, case["per_channel"][i]) if case["zero_points"][j] else None
             for j, i in enumerate((1, 3))]
    operands = {"input_scale": xs, "input_zero_point": zeros[0], "output_scale": ys, "output_zero_point": zeros[1]}
    return x, operands


def geometry(case):
    return {k: case[k] for k in ("window_size", "strides", "dilations", "start_padding", "end_padding")}


def run_case(device, case):
    """The case through a description with its layouts, into a canary-guarded output: the
    reference's bytes, and no byte outside the output written."""
    x, operands = make_case(case)
    if case["in_layout"] == "broadcast":
        x = np.broadcast_to(x[:1, :1], x.shape).copy()
    extra = dict(include_padding=case["include_padding"], rounding=case["rounding"],
                 vectorized_channels=case["vectorized_channels"])
    try:
        want = reference.quantized_average_pool(x, *operands.values(), **geometry(case), **extra)
    except ValueError:  # (a window covering no input element)
        assume(False)
    x_desc = pg.TensorDesc(case["data_type"], x.shape, layout_strides(x.shape, case["in_layout"]))
    descs = {role: None if a is None else pg.TensorDesc(a.dtype, a.shape) for role, a in operands.items()}
    try:
        plain = pg.QuantizedLinearAveragePoolingDesc(x_desc, *descs.values(), **geometry(case), **extra)
    except pg.ValidationError:
        assume(False)
    out = pg.TensorDesc(case["data_type"], plain.output.sizes, layout_strides(plain.output.sizes, case["out_layout"]))
    op = device.compile(pg.QuantizedLinearAveragePoolingDesc(x_desc, *descs.values(), out, **geometry(case), **extra))
    y = canary_tensor(device, out)
    tensors = [upload(device, x, case["in_layout"])] + [device.upload(a) for a in operands.values() if a is not None]
    assert op(*tensors, out=y) is y
    assert same_bits(y.numpy(), want), np.argwhere(y.numpy() != want)[:5]
    assert_canaries_intact(y)


@st.composite
def cases(draw, longest=8):
    dims = draw(st.integers(1, 3))
    longest = min(longest, {1: longest, 2: longest, 3: 12}[dims])   # (the reference holds every window's taps)
    sizes = (draw(st.integers(1, 2)), draw(st.integers(1, 5))) + tuple(draw(st.integers(1, longest)) for _ in range(dims))
    rounding = draw(st.sampled_from(ROUNDINGS))
    padded = rounding != "onnxruntime_global"
    return dict(
        sizes=sizes,
        window_size=tuple(draw(st.integers(1, 4)) for _ in range(dims)),
        strides=tuple(draw(st.integers(1, 3)) for _ in range(dims)),
        dilations=tuple(draw(st.sampled_from([1, 1, 2])) for _ in range(dims)),
        start_padding=tuple(draw(st.integers(0, 2 if padded else 0)) for _ in range(dims)),
        end_padding=tuple(draw(st.integers(0, 2 if padded else 0)) for _ in range(dims)),
        include_padding=draw(st.booleans()),
        rounding=rounding,
        vectorized_channels=draw(st.integers(0, sizes[1])) if rounding == "pytorch" else 0,
        data_type=draw(st.sampled_from([INT8, UINT8])),
        per_channel=tuple(draw(st.booleans()) for _ in range(4)),
        zero_points=(draw(st.booleans()), draw(st.booleans())),
        equal_scales=draw(st.booleans()),
        in_layout=draw(st.sampled_from(["packed", "channels_last", "gaps", "broadcast"])),
        out_layout=draw(st.sampled_from(["packed", "channels_last", "reversed"])),
        seed=draw(st.integers(0, 2**31)),
    )


@GPU_SETTINGS
@given(case=cases())
def test_quantized_average_pooling_matches_the_reference(device, case):
    run_case(device, case)


@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_every_rule_on_the_walks_each_layout_takes(device, rounding):
    # rows (packed, W a multiple of 4), rows from rows that start anywhere (W = 13),
    # channels (channels_last, C a multiple of 4), general (per-channel scales), plane
    # (global, integer rules), both types
    rng = np.random.default_rng(3)
    for sizes, layout, window, strides, data_type, per_channel in (
            ((2, 4, 8, 16), "packed", (3, 3), (1, 1), "int8", False),
            ((2, 3, 7, 13), "packed", (3, 3), (1, 1), "uint8", False),
            ((2, 8, 6, 8), "channels_last", (2, 2), (2, 2), "uint8", False),
            ((1, 3, 7, 9), "packed", (2, 3), (2, 1), "uint8", True),
            ((2, 3, 16, 16), "packed", (16, 16), (1, 1), "int8", False)):
        info = np.iinfo(data_type)
        x = rng.integers(info.min, info.max + 1, sizes).astype(data_type)
        shape = (1, sizes[1], 1, 1) if per_channel else (1, 1, 1, 1)
        xs = rng.uniform(0.01, 0.2, shape).astype(np.float32)
        xz = rng.integers(info.min, info.max + 1, shape).astype(data_type)
        yz = rng.integers(info.min, info.max + 1, shape).astype(data_type)
        kw = dict(window_size=window, strides=strides, rounding=rounding)
        if rounding == "pytorch":
            kw["vectorized_channels"] = 2
        want = reference.quantized_average_pool(x, xs, xz, xs, yz, **kw)
        got = pg.quantized_average_pool(upload(device, x, layout), xs, xz, xs, yz, device=device, **kw)
        assert same_bits(got.numpy(), want), (sizes, per_channel)


def _first_pair_summing_otherwise():
    """(a, b, scale) where the float32 sum scale * a + scale * b, averaged and divided by the
    scale, rounds to another integer than the exactly rounded scale * (a + b) does."""
    f32 = np.float32
    for scale in map(f32, (0.1, 0.3, 0.7, 0.01, 1 / 3, 0.05, 0.9)):
        for a in range(1, 60):
            for b in range(1, 60):
                sequential = f32(f32(scale * f32(a)) + f32(scale * f32(b)))
                exact = f32(scale * f32(a + b))
                if np.rint(f32(f32(sequential / f32(2)) / scale)) != np.rint(f32(f32(exact / f32(2)) / scale)):
                    return a, b, scale
    raise AssertionError("no such pair")


def test_the_float_rules_sum_the_dequantized_taps_in_the_windows_order(device):
    # DirectML's and ONNX Runtime's rules dequantize each tap and add them in float32 in the
    # window's order: where that sum differs from the exactly rounded one, so do the results
    a, b, scale = _first_pair_summing_otherwise()
    x = np.array([a, b], np.int8).reshape(1, 1, 2)
    f32 = np.float32
    sequential = np.rint(f32(f32(f32(f32(scale * f32(a)) + f32(scale * f32(b))) / f32(2)) / scale))
    for rounding in ("directml", "onnxruntime"):
        assert pg.quantized_average_pool(x, scale, 0, scale, 0, 2, rounding=rounding, device=device).item() == sequential


def test_rules_differ_where_their_documentation_says(device):
    # x - zero = 1 and 2 averaged: 1.5, a tie; the output zero point 1 is odd
    x = np.array([1, 2], np.uint8).reshape(1, 1, 2)
    run = lambda rounding, **kw: pg.quantized_average_pool(x, 1.0, 0, 1.0, 1, 2, rounding=rounding,  # noqa: E731
                                                           device=device, **kw).item()
    assert run("directml") == 2 + 1          # round(1.5) + 1
    assert run("onnxruntime") == 2           # round(1.5 + 1) = round(2.5)
    assert run("pytorch") == 2               # round(1.5 + 1), PyTorch's contiguous kernel
    assert run("pytorch", vectorized_channels=1) == 3   # its vectorised channels: round(1.5) + 1
    assert run("onnxruntime_global") == 3    # round(3 * (1 / 2)) + 1


def test_outputs_saturate_and_zero_points_default_to_zero(device):
    x = np.array([[[[-128, -128], [127, 127]]]], np.int8)
    assert pg.quantized_average_pool(x, 1.0, None, 0.01, None, (1, 2), device=device).ravel().tolist() == [-128, 127]
    u = np.array([[[[0, 255]]]], np.uint8)   # (0 - 255 + 255 - 255) / 2 = -127.5 -> -128, + 200
    assert pg.quantized_average_pool(u, 1.0, 255, 1.0, 200, (1, 2), device=device).item() == 72
    assert pg.quantized_average_pool(u, 1.0, 255, 1.0, 100, (1, 2), device=device).item() == 0


def test_integer_adaptive_average_pooling_matches_the_reference(device):
    rng = np.random.default_rng(5)
    for data_type in ("int8", "uint8"):
        info = np.iinfo(data_type)
        for sizes, out in (((2, 3, 13, 7), (5, 3)), ((1, 2, 9), (4,)), ((1, 2, 5, 6, 7), (2, 3, 4)),
                           ((2, 3, 12, 8), (3, 4)), ((1, 2, 7, 7), (1, 1))):
            x = rng.integers(info.min, info.max + 1, sizes).astype(data_type)
            got = pg.adaptive_average_pool(x, out, device=device)
            assert same_bits(got, reference.integer_adaptive_average_pool(x, out)), (data_type, sizes, out)


def test_scales_and_zero_points_come_in_every_documented_form(device):
    x = np.arange(24, dtype=np.uint8).reshape(1, 3, 2, 4)
    want = reference.quantized_average_pool(x, [0.5, 0.25, 0.125], 3, 0.5, [1, 2, 3], (2, 2))
    forms = [
        ([0.5, 0.25, 0.125], 3, np.float32(0.5), np.array([1, 2, 3], np.uint8)),
        (np.array([0.5, 0.25, 0.125]).reshape(1, 3, 1, 1), np.array(3), np.array([0.5], np.float32), (1, 2, 3)),
        (device.upload(np.array([0.5, 0.25, 0.125], np.float32).reshape(1, 3, 1, 1)),
         device.upload(np.full((1, 1, 1, 1), 3, np.uint8)), 0.5,
         device.upload(np.array([1, 2, 3], np.uint8).reshape(1, 3, 1, 1))),
    ]
    for xs, xz, ys, yz in forms:
        assert same_bits(pg.quantized_average_pool(x, xs, xz, ys, yz, (2, 2), device=device), want)
    t = pg.quantized_average_pool(device.upload(x), *forms[0], (2, 2))
    assert isinstance(t, pg.Tensor) and same_bits(t.numpy(), want)


def test_results_are_the_same_bits_run_after_run(device):
    x = np.random.default_rng(6).integers(-128, 128, (2, 4, 40, 40)).astype(np.int8)
    for rounding in ROUNDINGS:
        first = pg.quantized_average_pool(x, 0.07, 3, 0.05, -2, (40, 40), rounding=rounding, device=device)
        assert all(same_bits(pg.quantized_average_pool(x, 0.07, 3, 0.05, -2, (40, 40), rounding=rounding,
                                                       device=device), first) for _ in range(2))


# -- long windows -------------------------------------------------------------------------

@pytest.fixture(params=["cpu", "gpu"])
def preset(device, request):
    with tuned_for(device, request.param):
        yield device


@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_long_windows_on_the_presets(preset, rounding):
    # 512 x 512 taps: a float rule's parts chained (one pass after another), an integer
    # rule's merged; a 1-D window of 70,000 taps strided by 40,000
    rng = np.random.default_rng(7)
    x = rng.integers(0, 256, (1, 2, 512, 512)).astype(np.uint8)
    got = pg.quantized_average_pool(x, 0.02, 128, 0.02, 128, (512, 512), rounding=rounding, device=preset)
    assert same_bits(got, reference.quantized_average_pool(x, 0.02, 128, 0.02, 128, (512, 512), rounding=rounding))
    v = rng.integers(-128, 128, (1, 2, 110000)).astype(np.int8)
    kw = dict(window_size=(70000,), strides=(40000,), rounding=rounding)
    got = pg.quantized_average_pool(v, 0.01, -1, 0.003, 2, device=preset, **kw)
    assert same_bits(got, reference.quantized_average_pool(v, 0.01, -1, 0.003, 2, **kw))
    if rounding == "pytorch":  # (and the integer adaptive average's bins, split and merged)
        z = rng.integers(-128, 128, (1, 2, 100000)).astype(np.int8)
        assert same_bits(pg.adaptive_average_pool(z, 3, device=preset), reference.integer_adaptive_average_pool(z, 3))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(case=cases(longest=40), tuning=st.sampled_from(list(SPLITTING)))
def test_windows_split_at_a_small_loop_budget(device, case, tuning):
    case = dict(case, window_size=tuple(max(w, s // 2) for w, s in zip(case["window_size"], case["sizes"][2:])))
    with tuned_for(device, SPLITTING[tuning]):
        run_case(device, case)


def test_split_programs_chain_the_float_rules_and_merge_the_integer_ones():
    desc = lambda rounding: pg.QuantizedLinearAveragePoolingDesc(  # noqa: E731
        pg.TensorDesc("int8", (1, 2, 600, 600)), pg.TensorDesc("float32", (1, 1, 1, 1)),
        output_scale=pg.TensorDesc("float32", (1, 1, 1, 1)), window_size=(600, 600), rounding=rounding)
    chained = pg.kernels.program_for(desc("directml"))
    assert len(chained.passes) > 1 and all(dict(p.constants).get("CHAINED") for p in chained.passes)
    assert [p.params["chain_part"] for p in chained.passes] == list(range(len(chained.passes)))
    merged = pg.kernels.program_for(desc("pytorch"))
    assert not any(dict(p.constants).get("CHAINED") for p in merged.passes)

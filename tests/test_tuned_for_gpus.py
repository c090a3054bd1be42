"""The kernels compiled for GPUs (``pg.Tuning.for_gpu()``: two outputs per invocation
with the windows' taps written out, and a workgroup per output for global pooling, the
plane walk),
run on every adapter, software ones included, against the NumPy reference.  On real GPUs
they are the default; here they would otherwise never run."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given

import poolgpu as pg
import reference
import test_average_lp
import test_max_pool
from helpers import (FLOAT_TYPES, assert_canaries_intact, canary_tensor, forward_walk, layout_strides, random_values,
                     same_bits, tuned_for)
from poolgpu import kernels
from test_grad import assert_gradient_close
from test_scale import bounded

# Global windows: planes smaller than the plane walk's lanes (one invocation per output),
# and of one to a few lanes' worth with a ragged end, 1-D, 2-D and 3-D (the plane walk).
PLANES = ((1, 1), (7, 7), (17, 19), (1000,), (4, 8, 9), (40, 40))


@pytest.fixture
def gpu_tuned(device):
    with tuned_for(device, "gpu"):
        yield device


def _walk(desc, gpu=True):
    return forward_walk(desc, pg.Tuning.preset("gpu" if gpu else "cpu"))


def test_global_windows_take_the_plane_walk():
    x = pg.TensorDesc("FLOAT32", (2, 8, 16, 16))
    for desc in (pg.MaxPooling2Desc(x, window_size=(16, 16)), pg.AveragePooling1Desc(x, window_size=(16, 16)),
                 pg.LpPooling1Desc(x, window_size=(16, 16), p=2), pg.AdaptiveMaxPoolingDesc(x, output_size=(1, 1)),
                 pg.AdaptiveAveragePoolingDesc(x, output_size=(1, 1))):
        assert _walk(desc) == "plane"
        assert _walk(desc, gpu=False) == "plane"
    # planes smaller than a GPU workgroup's lanes: packed several to a workgroup; without
    # packed planes, one invocation per output
    small = pg.MaxPooling2Desc(pg.TensorDesc("FLOAT32", (2, 8, 15, 17)), window_size=(15, 17))
    assert _walk(small) == "plane" and _walk(small, gpu=False) == "plane"
    unpacked = dataclasses.replace(pg.Tuning.for_gpu(), packed_planes=False)
    assert forward_walk(small, unpacked) == "general"
    # planes that are not contiguous (channels last): not the plane walk
    nhwc = pg.TensorDesc("FLOAT32", (2, 8, 16, 16), (2048, 1, 128, 8))
    assert _walk(pg.MaxPooling2Desc(nhwc, window_size=(16, 16))) != "plane"
    # a window short of the plane, padded or dilated is not global
    for kw in (dict(window_size=(16, 15)), dict(window_size=(16, 16), start_padding=(1, 0), end_padding=(0, 0)),
               dict(window_size=(8, 16), dilations=(2, 1))):
        assert _walk(pg.MaxPooling2Desc(x, **kw)) != "plane"
    # 3x3 windows: one output per invocation on GPUs, four rows of four on software adapters
    assert _walk(pg.MaxPooling2Desc(x, window_size=(3, 3), strides=(2, 2))) == "general"
    assert "window_walk_rows.wgsl" in kernels.program_for(
        pg.MaxPooling2Desc(x, window_size=(3, 3), strides=(2, 2))).passes[0].kernel.library


@pytest.mark.parametrize("plane", PLANES)
@pytest.mark.parametrize("data_type", [pg.DataType.FLOAT32, pg.DataType.FLOAT16, pg.DataType.UINT8, pg.DataType.INT64])
def test_global_max_pooling_with_indices(gpu_tuned, data_type, plane):
    for in_layout, out_layout, seed in (("packed", "packed", 1), ("channels_last", "reversed", 2)):
        test_max_pool.run_case(gpu_tuned, dict(
            sizes=(2, 3) + plane, window_size=plane, strides=(1,) * len(plane), dilations=(1,) * len(plane),
            start_padding=(0,) * len(plane), end_padding=(0,) * len(plane), data_type=data_type,
            in_layout=in_layout, out_layout=out_layout, indices="uint32", seed=seed))


@pytest.mark.parametrize("data_type", [pg.DataType.FLOAT32, pg.DataType.INT8])
def test_global_max_keeps_the_first_maximum_and_the_first_nan(gpu_tuned, data_type):
    dtype = data_type.numpy
    x = np.zeros((1, 2, 40, 40), dtype)
    x[0, 0].flat[[300, 7, 1500]] = 5   # ties: the first (7) wins, whichever lane saw each
    if dtype == np.float32:
        x[0, 1].flat[[900, 33, 1200]] = np.nan
        x[0, 1].flat[5] = np.inf
    y, idx = pg.max_pool(x, (40, 40), return_indices=True, device=gpu_tuned)
    y_ref, i_ref = reference.max_pool(x, (40, 40))
    assert same_bits(y, y_ref)
    np.testing.assert_array_equal(idx, i_ref)
    assert idx[0, 0, 0, 0] == 7


@pytest.mark.parametrize("plane", PLANES[1:])
@pytest.mark.parametrize("operator", sorted(test_average_lp.OPERATORS))
@pytest.mark.parametrize("data_type", FLOAT_TYPES)
def test_global_average_and_lp_pooling(gpu_tuned, data_type, operator, plane):
    for in_layout, out_layout, seed in (("packed", "packed", 1), ("channels_last", "reversed", 2)):
        test_average_lp.run_case(gpu_tuned, dict(
            sizes=(2, 3) + plane, window_size=plane, strides=(1,) * len(plane), dilations=(1,) * len(plane),
            start_padding=(0,) * len(plane), end_padding=(0,) * len(plane), operator=operator,
            data_type=data_type, in_layout=in_layout, out_layout=out_layout, seed=seed))


@pytest.mark.parametrize("name", ["average", "lp2", "lp1"])
def test_global_sums_of_ten_thousand_elements_stay_accurate(gpu_tuned, name):
    # the merged lanes' compensation: large terms of both signs around a small mean
    x = (np.random.default_rng(8).standard_normal((2, 3, 112, 112)) * 100 + 0.01).astype(np.float32)
    args = test_average_lp.operator_args(name)
    got = (pg.average_pool if "average" in name else pg.lp_pool)(x, (112, 112), device=gpu_tuned, **args)
    test_average_lp.assert_accurate(got, test_average_lp.OPERATORS[name][1](x, (112, 112), **args), np.float32)


def test_lp_merges_lanes_of_very_different_scales(gpu_tuned):
    x = np.full((1, 1, 600), 1e-30, np.float32)
    x[0, 0, 599] = 3e30   # one lane's exponent far above the others'
    x[0, 0, 1] = 4e30
    got = pg.lp_pool(x, (600,), p=2, device=gpu_tuned)
    np.testing.assert_allclose(got, reference.lp_pool(x, (600,), p=2), rtol=1e-6)


def _assert_global_max_and_average(x, max_with_indices, average, reference_max, reference_average):
    y, idx = max_with_indices(x)
    y_ref, i_ref = reference_max(x)
    assert same_bits(y, y_ref)
    np.testing.assert_array_equal(idx, i_ref)
    test_average_lp.assert_accurate(average(x), reference_average(x), x.dtype)


@pytest.mark.parametrize("data_type", FLOAT_TYPES)
def test_global_adaptive_pooling(gpu_tuned, data_type):
    x = random_values(data_type, (2, 5, 33, 21), np.random.default_rng(3), specials=False)
    _assert_global_max_and_average(
        x, lambda x: pg.adaptive_max_pool(x, (1, 1), return_indices=True, device=gpu_tuned),
        lambda x: pg.adaptive_average_pool(x, (1, 1), device=gpu_tuned),
        lambda x: reference.adaptive_max_pool(x, (1, 1)), lambda x: reference.adaptive_average_pool(x, (1, 1)))


def test_global_max_pooling_gradient(gpu_tuned):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 17, 19)).astype(np.float32)
    dy = rng.standard_normal((2, 3, 1, 1)).astype(np.float32)
    got = pg.max_pool_grad(x, dy, (17, 19), device=gpu_tuned)
    assert_gradient_close(got, reference.max_pool_grad(x, dy, (17, 19)), dy)


def test_the_plane_walks_workgroup_memory_holds_the_most_lanes_a_tuning_takes():
    assert "const PLANE_LANES_MAX: u32 = 256u;" in kernels.read_wgsl("common/plane_reduce.wgsl")
    pg.Tuning(plane_lanes=256)
    with pytest.raises(pg.ValidationError, match="plane_lanes"):
        pg.Tuning(plane_lanes=512)


@pytest.mark.parametrize("limit", [2048, 4096])
def test_global_pooling_in_chunks_of_planes(device, limit):
    # tensors larger than a binding: the plane walk runs chunk by chunk, from plane_origin
    x = np.random.default_rng(5).standard_normal((3, 7, 16, 17)).astype(np.float32)
    with tuned_for(bounded(device, limit), "gpu") as small:  # (test_scale shares these Devices)
        op = small.compile(pg.MaxPooling2Desc(pg.TensorDesc("FLOAT32", x.shape), window_size=(16, 17)))
        assert len(op._program.passes) > 1 and op._program.passes[0].kernel is kernels.window.MAX_POOL["plane"]
        _assert_global_max_and_average(
            x, lambda x: pg.max_pool(x, (16, 17), return_indices=True, device=small),
            lambda x: pg.average_pool(x, (16, 17), device=small),
            lambda x: reference.max_pool(x, (16, 17)), lambda x: reference.average_pool(x, (16, 17)))


@test_max_pool.GPU_SETTINGS
@given(case=test_max_pool.pooling_cases())
def test_max_pooling_matches_the_reference(gpu_tuned, case):
    test_max_pool.run_case(gpu_tuned, case)


@test_average_lp.GPU_SETTINGS
@given(case=test_average_lp.cases())
def test_average_and_lp_pooling_match_the_reference(gpu_tuned, case):
    test_average_lp.run_case(gpu_tuned, case)


# window_walk.wgsl writes out up to UNROLLED = 4 taps along each dimension and loops over
# longer ones: windows on both sides of that bound, along each dimension, with padding, odd
# and even output rows (a lone last output), values with repeats (ties: the first maximum).
LONG_WINDOWS = (
    dict(sizes=(2, 3, 9, 13), window_size=(4, 5), strides=(1, 2), start_padding=(1, 2), end_padding=(2, 1)),
    dict(sizes=(1, 2, 12, 11), window_size=(6, 3), strides=(2, 1), start_padding=(0, 1), end_padding=(3, 1)),
    dict(sizes=(1, 2, 7, 6, 20), window_size=(5, 2, 8), strides=(1, 1, 3), start_padding=(2, 0, 1),
         end_padding=(2, 1, 4)),
)


@pytest.mark.parametrize("geometry", LONG_WINDOWS, ids=lambda g: "x".join(map(str, g["window_size"])))
@pytest.mark.parametrize("data_type", [pg.DataType.FLOAT32, pg.DataType.FLOAT16, pg.DataType.INT8])
def test_windows_longer_than_the_taps_written_out(gpu_tuned, geometry, data_type):
    dims = len(geometry["window_size"])
    case = dict(geometry, dilations=(1,) * dims, data_type=data_type, in_layout="packed", out_layout="packed",
                indices="uint32", seed=dims)
    assert _walk(pg.MaxPooling2Desc(pg.TensorDesc(data_type, case["sizes"]),
                                    **{k: case[k] for k in ("window_size", "strides", "start_padding",
                                                            "end_padding")})) == "general"
    test_max_pool.run_case(gpu_tuned, case)
    if data_type != pg.DataType.INT8:
        for operator in ("average_with_padding", "lp2"):
            test_average_lp.run_case(gpu_tuned, dict(case, operator=operator))


@pytest.mark.parametrize("data_type", [pg.DataType.FLOAT16, pg.DataType.INT16])
@pytest.mark.parametrize("out_layout", ["packed", "channels_last"])
@pytest.mark.parametrize("lead_bytes", [32, 34])   # the output's first element: even, then odd
@pytest.mark.parametrize("width", [9, 12])          # output rows of 5 (a lone last output) and 6
def test_16_bit_outputs_in_pairs(gpu_tuned, data_type, out_layout, lead_bytes, width):
    # two outputs per invocation: a pair sharing a word is stored at once, others (odd
    # offsets, W strides > 1, a row's lone last output) element by element; no byte
    # outside the output changes
    sizes = (2, 3, 7, width)
    x = random_values(data_type, sizes, np.random.default_rng(width + lead_bytes))
    geometry = dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1))
    input_desc = pg.TensorDesc(data_type, sizes)
    out_sizes = pg.MaxPooling2Desc(input_desc, **geometry).output.sizes
    output = pg.TensorDesc(data_type, out_sizes, layout_strides(out_sizes, out_layout))
    indices = pg.TensorDesc("uint32", out_sizes, layout_strides(out_sizes, out_layout))
    desc = pg.MaxPooling2Desc(input_desc, output, indices, **geometry)
    assert dict(gpu_tuned.compile(desc)._program.passes[0].constants)["OUTPUTS"] == 2
    y, idx = canary_tensor(gpu_tuned, output, lead_bytes=lead_bytes), canary_tensor(gpu_tuned, indices)
    gpu_tuned.compile(desc)(gpu_tuned.upload(x), out=(y, idx))
    y_ref, i_ref = reference.max_pool(x, **geometry)
    assert same_bits(y.numpy(), y_ref)
    np.testing.assert_array_equal(idx.numpy(), i_ref)
    assert_canaries_intact(y)
    assert_canaries_intact(idx)

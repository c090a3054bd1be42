"""Max pooling (MAX_POOLING, MAX_POOLING1, MAX_POOLING2) on every adapter, against the
independent NumPy reference: values bit-exact, indices exact, no byte outside an output
written."""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import poolgpu as pg
import reference
from poolgpu import kernels
from helpers import (ALL_TYPES, assert_canaries_intact, canary_tensor, draw_row_geometry, finfo, forward_walk,
                     layout_strides, random_values, same_bits, sentinel_input, upload)

GPU_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def pooling_cases(draw, types=ALL_TYPES):
    dims = draw(st.integers(1, 3))
    sizes = [draw(st.integers(1, 3)), draw(st.integers(1, 4))] + [draw(st.integers(1, 9)) for _ in range(dims)]
    window = [draw(st.integers(1, 4)) for _ in range(dims)]
    strides = [draw(st.integers(1, 3)) for _ in range(dims)]
    dilations = [draw(st.sampled_from([1, 1, 2, 3])) for _ in range(dims)]
    start = [draw(st.integers(0, 2)) for _ in range(dims)]
    end = [draw(st.integers(0, 2)) for _ in range(dims)]
    return dict(
        sizes=tuple(sizes), window_size=tuple(window), strides=tuple(strides), dilations=tuple(dilations),
        start_padding=tuple(start), end_padding=tuple(end),
        data_type=draw(st.sampled_from(types)),
        in_layout=draw(st.sampled_from(["packed", "channels_last", "reversed", "gaps", "broadcast"])),
        out_layout=draw(st.sampled_from(["packed", "channels_last", "gaps", "reversed"])),
        indices=draw(st.sampled_from([None, "uint32", "uint64"])),
        seed=draw(st.integers(0, 2**31)),
    )


def run_case(device, case):
    geometry = {k: case[k] for k in ("window_size", "strides", "dilations", "start_padding", "end_padding")}
    rng = np.random.default_rng(case["seed"])
    x = random_values(case["data_type"], case["sizes"], rng)
    if case["in_layout"] == "broadcast":  # one plane repeated over N and C
        x = np.broadcast_to(x[:1, :1], x.shape).copy()
    input_desc = pg.TensorDesc(case["data_type"], case["sizes"], layout_strides(case["sizes"], case["in_layout"]))
    try:
        plain = pg.MaxPooling2Desc(input_desc, output_indices=case["indices"], **geometry)
    except pg.ValidationError:
        assume(False)  # e.g. a window wholly in padding: covered by the validation tests
    out_sizes = plain.output.sizes
    output = pg.TensorDesc(case["data_type"], out_sizes, layout_strides(out_sizes, case["out_layout"]))
    indices = None
    if case["indices"]:
        indices = pg.TensorDesc(case["indices"], out_sizes, layout_strides(out_sizes, case["out_layout"]))
    desc = pg.MaxPooling2Desc(input_desc, output, indices, **geometry)
    op = device.compile(desc)
    xt = upload(device, x, case["in_layout"])
    outs = [canary_tensor(device, output)] + ([canary_tensor(device, indices, lead_bytes=40)] if indices else [])
    result = op(xt, out=tuple(outs))
    result = result if isinstance(result, tuple) else (result,)
    assert all(r is o for r, o in zip(result, outs))
    y_ref, i_ref = reference.max_pool(x, **geometry)
    assert same_bits(result[0].numpy(), y_ref), "values differ"
    if indices:
        np.testing.assert_array_equal(result[1].numpy(), i_ref.astype(case["indices"]))
    for t in outs:
        assert_canaries_intact(t)


def assert_pools_with_indices(device, desc, xt, x, geometry):
    """Run ``desc`` (with indices) on ``xt`` (holding ``x``) into canary-guarded outputs:
    values bit-exact, indices exact, no byte outside the outputs written."""
    y, idx = canary_tensor(device, desc.output), canary_tensor(device, desc.output_indices)
    device.compile(desc)(xt, out=(y, idx))
    y_ref, i_ref = reference.max_pool(x, **geometry)
    assert same_bits(y.numpy(), y_ref)
    np.testing.assert_array_equal(idx.numpy(), i_ref)
    assert_canaries_intact(y)
    assert_canaries_intact(idx)


@GPU_SETTINGS
@given(case=pooling_cases(types=(pg.DataType.FLOAT32, pg.DataType.FLOAT16)))
def test_max_pool_float_matches_reference(device, case):
    run_case(device, case)


@GPU_SETTINGS
@given(case=pooling_cases())
def test_max_pool_every_type_matches_reference(device, case):
    run_case(device, case)


@pytest.mark.parametrize("data_type", ALL_TYPES, ids=lambda t: t.name)
def test_max_pool_type_extremes_survive(device, data_type):
    dtype = data_type.numpy
    if data_type.is_float:
        extremes = np.array([finfo(dtype).min, finfo(dtype).max, finfo(dtype).tiny, -np.inf, np.inf, -0.0], dtype)
    else:
        info = np.iinfo(dtype)
        extremes = np.array([info.min, info.max, info.min + 1, info.max - 1, 0, 1], dtype)
        if data_type.size == 8:  # beyond 2^53, where float64 would round
            extremes[4] = 2**53 + 1
            extremes[5] = -(2**53) - 1 if info.min < 0 else 2**63 + 1
    x = np.tile(extremes, (1, 2, 4, 1))  # every window of 1 holds one extreme
    y, idx = pg.max_pool(x, (1, 1), return_indices=True, device=device)
    assert same_bits(y, x)
    np.testing.assert_array_equal(idx.ravel(), np.arange(x.size))
    y, idx = pg.max_pool(x, (1, 6), return_indices=True, indices_type="uint64", device=device)
    y_ref, i_ref = reference.max_pool(x, (1, 6))
    assert same_bits(y, y_ref)
    np.testing.assert_array_equal(idx, i_ref)


def test_max_pool_ties_go_to_the_lowest_index(device):
    x = np.zeros((2, 3, 4, 4), np.float32)
    y, idx = pg.max_pool(x, (3, 3), strides=(1, 1), return_indices=True, device=device)
    plane = np.arange(6).reshape(2, 3, 1, 1) * 16
    np.testing.assert_array_equal(idx, plane + np.array([[0, 1], [4, 5]]))
    # -0.0 and +0.0 are equal: the first one wins and keeps its sign
    x = np.array([-0.0, 0.0, 0.0, -0.0], np.float32).reshape(1, 1, 4)
    y, idx = pg.max_pool(x, (2,), strides=(2,), return_indices=True, device=device)
    assert same_bits(y, np.array([-0.0, 0.0], np.float32).reshape(1, 1, 2))
    np.testing.assert_array_equal(idx.ravel(), [0, 2])


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_max_pool_nan_wins_and_the_first_nan_is_chosen(device, dtype):
    x = np.array([1, np.nan, 5, np.nan, np.inf, -np.inf, 2, 3], dtype).reshape(1, 1, 8)
    nan2 = np.frombuffer(np.array([0x7FC00123 if dtype == np.float32 else 0x7E01], np.uint32 if dtype == np.float32 else np.uint16).tobytes(), dtype)[0]
    x[0, 0, 3] = nan2  # a second NaN with another payload: the first one must be returned
    y, idx = pg.max_pool(x, (4,), strides=(2,), return_indices=True, device=device)
    y_ref, i_ref = reference.max_pool(x, (4,), (2,))
    assert same_bits(y, y_ref)
    np.testing.assert_array_equal(idx.ravel(), [1, 3, 4])
    assert same_bits(y[0, 0, :1], x[0, 0, 1:2])


def test_max_pool_never_selects_padding(device):
    x = -np.arange(1, 26, dtype=np.float32).reshape(1, 1, 5, 5)  # all negative: padding (0) would win
    x[0, 0, 0, 0] = -np.inf
    y, idx = pg.max_pool(x, (3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1),
                         return_indices=True, device=device)
    y_ref, i_ref = reference.max_pool(x, (3, 3), (2, 2), (1, 1), (1, 1))
    assert (y < 0).all()
    assert same_bits(y, y_ref)
    np.testing.assert_array_equal(idx, i_ref)
    # a window whose only input element is -inf yields -inf, not padding
    x = np.full((1, 1, 1), -np.inf, np.float32)
    y, idx = pg.max_pool(x, (3,), start_padding=(1,), end_padding=(1,), return_indices=True, device=device)
    assert y.ravel().tolist() == [-np.inf] and idx.ravel().tolist() == [0]


def test_max_pool_window_equal_to_input_is_global(device):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 5, 6, 7)).astype(np.float32)
    y, idx = pg.max_pool(x, (5, 6, 7), return_indices=True, device=device)
    np.testing.assert_array_equal(y.reshape(2, 3), x.reshape(2, 3, -1).max(-1))
    np.testing.assert_array_equal(idx.reshape(2, 3), x.reshape(6, -1).argmax(-1).reshape(2, 3) + np.arange(6).reshape(2, 3) * 210)


@pytest.mark.parametrize("desc_class", [pg.MaxPoolingDesc, pg.MaxPooling1Desc, pg.MaxPooling2Desc])
def test_every_max_pooling_version_runs(device, desc_class):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 7, 7)).astype(np.float16)
    desc = desc_class(pg.TensorDesc("float16", x.shape), window_size=(3, 3), strides=(2, 2),
                      start_padding=(1, 1), end_padding=(1, 1))
    y = device.compile(desc)(device.upload(x))
    assert isinstance(y, pg.Tensor)
    assert same_bits(y.numpy(), reference.max_pool(x, (3, 3), (2, 2), (1, 1), (1, 1))[0])


@pytest.mark.parametrize("in_h", [1, 5, 8, 10, 12, 14])
def test_chunked_walk_with_any_output_height_writes_only_its_rows(device, in_h):
    """The rows walk computes up to four output rows per invocation: the last 1 to 4 rows
    (out_h 1, 3, 4, 5, 6, 7) are stored, the ones past the end are not."""
    rng = np.random.default_rng(in_h)
    x = rng.standard_normal((2, 3, in_h, 16)).astype(np.float32)
    geometry = dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1))
    desc = pg.MaxPooling2Desc(pg.TensorDesc("float32", x.shape), output_indices="uint32", **geometry)
    assert forward_walk(desc) == "rows"
    assert_pools_with_indices(device, desc, device.upload(x), x, geometry)


@pytest.mark.parametrize("out_layout", ["packed", "channels_last"])
@pytest.mark.parametrize("data_type", ALL_TYPES)
def test_rows_walk_with_any_output_layout_stores_element_by_element(device, data_type, out_layout):
    """An input contiguous along W whose outputs are not 4-element rows (out_w = 7; also
    channels last with 3 channels) takes the rows walk with scalar stores: right
    values and indices, nothing written past a row's end (packed 8/16-bit words included)."""
    rng = np.random.default_rng(ALL_TYPES.index(data_type))
    x = random_values(data_type, (2, 3, 7, 16), rng)
    geometry = dict(window_size=(3, 3), strides=(2, 2), dilations=(1, 2), start_padding=(1, 1), end_padding=(0, 1))
    y_ref, _ = reference.max_pool(x, **geometry)
    index_type = ("uint32", "uint64")[ALL_TYPES.index(data_type) % 2]
    out = pg.TensorDesc(data_type, y_ref.shape, layout_strides(y_ref.shape, out_layout))
    out_idx = pg.TensorDesc(index_type, y_ref.shape, layout_strides(y_ref.shape, out_layout))
    desc = pg.MaxPooling2Desc(pg.TensorDesc(data_type, x.shape), out, out_idx, **geometry)
    assert y_ref.shape[-1] == 7 and forward_walk(desc) == "rows_tail"
    assert_pools_with_indices(device, desc, device.upload(x), x, geometry)


@pytest.mark.parametrize("lead_bytes", [16, 4])
@pytest.mark.parametrize("data_type", ALL_TYPES)
@pytest.mark.parametrize("in_w, geometry", [
    (14, dict(window_size=(3, 3), strides=(1, 1), start_padding=(1, 1), end_padding=(1, 1))),  # Inception's
    (7, dict(window_size=(3, 3), strides=(1, 1), start_padding=(1, 1), end_padding=(1, 1))),
    (13, dict(window_size=(5, 5), strides=(1, 1), start_padding=(2, 2), end_padding=(2, 2))),  # YOLO's SPP
    (14, dict(window_size=(2, 2), strides=(2, 2), end_padding=(1, 1))),  # ceil_mode: a window half in padding
    (11, dict(window_size=(2, 3), strides=(1, 2), dilations=(2, 1))),
])
def test_rows_walk_from_rows_that_start_anywhere(device, data_type, in_w, geometry, lead_bytes):
    """Rows whose width is no multiple of 4 (and an input starting anywhere): the rows walk
    assembling its chunks from single loads.  Values and indices exact; the elements a
    row's last chunk reads past its end (the next row's, or past the input: NaN or the
    maximum here) never reach a stored output."""
    rng = np.random.default_rng(in_w + lead_bytes + ALL_TYPES.index(data_type))
    x = random_values(data_type, (2, 3, 9, in_w), rng)
    desc = pg.MaxPooling2Desc(pg.TensorDesc(data_type, x.shape), output_indices="uint32", **geometry)
    assert forward_walk(desc) == "rows_any"
    assert_pools_with_indices(device, desc, sentinel_input(device, x, lead_bytes=lead_bytes, tail_bytes=0), x,
                              geometry)


@pytest.mark.parametrize("data_type", [pg.DataType.FLOAT32, pg.DataType.UINT8])
def test_rows_walk_at_an_unaligned_offset_reads_rows_that_start_anywhere(device, data_type):
    """An input the rows walk reads in 4-element chunks, placed at an offset that is not a
    multiple of 4 elements: the call takes the rows walk from rows that start anywhere, with
    the same results."""
    x = random_values(data_type, (2, 3, 9, 16), np.random.default_rng(5))
    geometry = dict(window_size=(3, 3), strides=(1, 1), start_padding=(1, 1), end_padding=(1, 1))
    desc = pg.MaxPooling2Desc(pg.TensorDesc(data_type, x.shape), output_indices="uint32", **geometry)
    program = kernels.program_for(desc)
    assert forward_walk(desc) == "rows" and program.fallback.passes[0].kernel == kernels.window.MAX_POOL["rows_any"]
    assert_pools_with_indices(device, desc, sentinel_input(device, x, lead_bytes=4 * data_type.size), x, geometry)


SIXTEEN_BIT = tuple(t for t in ALL_TYPES if t.size == 2)


@pytest.mark.parametrize("lead_bytes", [16, 8])
@pytest.mark.parametrize("data_type", SIXTEEN_BIT)
@pytest.mark.parametrize("in_w, geometry", [
    (16, dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1))),  # first chunk odd
    (16, dict(window_size=(2, 2), strides=(2, 2))),  # even
    (24, dict(window_size=(3, 3), strides=(1, 1), start_padding=(1, 1), end_padding=(1, 1))),  # either
    (32, dict(window_size=(2, 5), strides=(1, 3), start_padding=(0, 2), end_padding=(0, 2))),  # either, 4 chunks
    (24, dict(window_size=(1, 3), strides=(1, 2), dilations=(1, 3), start_padding=(0, 3), end_padding=(0, 1))),
])
def test_rows_walk_reads_16_bit_inputs_eight_elements_at_a_time(device, data_type, in_w, geometry, lead_bytes):
    """16-bit inputs whose rows hold whole 16-byte words: the rows walk reads pairs of chunks
    (PAIRED), whichever chunk a span starts on; an input starting 8 bytes into a word takes
    the fallback.  Values and indices exact; nothing outside the input's elements pooled."""
    rng = np.random.default_rng(in_w + lead_bytes)
    x = random_values(data_type, (2, 3, 9, in_w), rng)
    desc = pg.MaxPooling2Desc(pg.TensorDesc(data_type, x.shape), output_indices="uint32", **geometry)
    program = kernels.program_for(desc)
    assert dict(program.passes[0].constants).get("PAIRED") and program.aligned_elements == 8
    assert_pools_with_indices(device, desc, sentinel_input(device, x, lead_bytes=lead_bytes), x, geometry)


@settings(GPU_SETTINGS, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])
@given(data=st.data())
def test_rows_walk_on_random_row_geometries(device, data):
    """Inputs contiguous along W, with whole chunks (and for 16-bit types pairs of chunks) or
    rows that start anywhere: the rows walks over random windows, strides, dilations and
    paddings, several output rows per invocation; values and indices exact, nothing written
    outside the outputs."""
    data_type = data.draw(st.sampled_from(ALL_TYPES))
    in_h, in_w = data.draw(st.integers(1, 13)), data.draw(st.sampled_from([8, 16, 24, 40, 7, 13, 22]))
    geometry = draw_row_geometry(data)
    x = random_values(data_type, (2, 2, in_h, in_w), np.random.default_rng(data.draw(st.integers(0, 2**31))))
    try:
        desc = pg.MaxPooling2Desc(pg.TensorDesc(data_type, x.shape), output_indices="uint32", **geometry)
    except pg.ValidationError:
        assume(False)
    assume(forward_walk(desc) in kernels.window.ROWS_WALKS)
    assert_pools_with_indices(device, desc, device.upload(x), x, geometry)

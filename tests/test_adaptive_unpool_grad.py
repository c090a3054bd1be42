"""The gradients of adaptive max and average pooling and of max unpooling on every adapter
and with the GPU tuning: against the independent NumPy reference (random shapes, bins
that overlap or do not divide, 1-D to 3-D, layouts, ties and NaN, repeated and
out-of-range indices, FLOAT16), bit-identical run after run, nothing written outside dx,
and PyTorch's autograd of adaptive_{max,avg}_pool{1,2,3}d and max_unpool{1,2,3}d."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import poolgpu as pg
import reference
from helpers import ALL_TYPES, FLOAT_TYPES, layout_strides, random_values, same_bits, tuned_for, upload
from poolgpu import kernels
from test_grad import assert_gradient_close, run_output
from test_unpool import random_indices

GPU_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
F32, F16 = pg.DataType.FLOAT32, pg.DataType.FLOAT16
LAYOUTS = ["packed", "channels_last", "reversed", "gaps"]


@st.composite
def adaptive_cases(draw):
    dims = draw(st.integers(1, 3))
    spatial = tuple(draw(st.integers(1, 9)) for _ in range(dims))
    # divisors of the input (disjoint bins) and any size, larger than the input included
    # (bins that overlap or do not divide it)
    output = tuple(draw(st.one_of(st.sampled_from([d for d in range(1, s + 1) if s % d == 0]), st.integers(1, 12)))
                   for s in spatial)
    return dict(
        sizes=(draw(st.integers(1, 3)), draw(st.integers(1, 4))) + spatial,
        output_size=output,
        data_type=draw(st.sampled_from(FLOAT_TYPES)),
        integer_dy=draw(st.booleans()),   # small integers: every f32 sum exact
        in_layout=draw(st.sampled_from(LAYOUTS + ["broadcast"])),
        out_layout=draw(st.sampled_from(LAYOUTS)),
        tuning=draw(st.sampled_from(["cpu", "gpu"])),
        seed=draw(st.integers(0, 2**31)),
    )


def random_dy(case, sizes, rng):
    dtype = case["data_type"].numpy
    if case["integer_dy"]:
        return rng.integers(-8, 9, sizes).astype(dtype)
    return rng.standard_normal(sizes).astype(dtype)


def described(data_type, sizes, layout):
    return pg.TensorDesc(data_type, sizes, layout_strides(sizes, layout))


@GPU_SETTINGS
@given(case=adaptive_cases())
def test_adaptive_max_pool_grad_matches_reference(device, case):
    dt, sizes = case["data_type"], case["sizes"]
    rng = np.random.default_rng(case["seed"])
    x = random_values(dt, sizes, rng)   # NaN, infinities, signed zeros and ties
    if case["in_layout"] == "broadcast":
        x = np.broadcast_to(x[:1, :1], x.shape).copy()
    out_sizes = sizes[:2] + case["output_size"]
    dy = random_dy(case, out_sizes, rng)
    dy_layout = "packed" if case["in_layout"] == "broadcast" else case["in_layout"]
    desc = pg.AdaptiveMaxPoolingGradDesc(described(dt, sizes, case["in_layout"]), described(dt, out_sizes, dy_layout),
                                         described(dt, sizes, case["out_layout"]))
    with tuned_for(device, case["tuning"]):
        got = run_output(device, desc, (upload(device, x, case["in_layout"]), upload(device, dy, dy_layout)),
                         desc.output_gradient)
    assert_gradient_close(got, reference.adaptive_max_pool_grad(x, dy), dy, exact=case["integer_dy"] and dt == F32)


@GPU_SETTINGS
@given(case=adaptive_cases())
def test_adaptive_average_pool_grad_matches_reference(device, case):
    dt, sizes = case["data_type"], case["sizes"]
    out_sizes = sizes[:2] + case["output_size"]
    dy = random_dy(case, out_sizes, np.random.default_rng(case["seed"]))
    dy_layout = case["in_layout"]
    if dy_layout == "broadcast":
        dy = np.broadcast_to(dy[:1, :1], dy.shape).copy()
    desc = pg.AdaptiveAveragePoolingGradDesc(described(dt, out_sizes, dy_layout), described(dt, sizes, case["out_layout"]))
    with tuned_for(device, case["tuning"]):
        got = run_output(device, desc, (upload(device, dy, dy_layout),), desc.output_gradient)
    assert_gradient_close(got, reference.adaptive_average_pool_grad(dy, sizes), dy)


@st.composite
def unpool_cases(draw):
    dims = draw(st.integers(1, 3))
    lead = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    return dict(
        sizes=lead + tuple(draw(st.integers(1, 9)) for _ in range(dims)),       # dx's, the indices'
        out_sizes=lead + tuple(draw(st.integers(1, 9)) for _ in range(dims)),   # dy's
        data_type=draw(st.sampled_from(ALL_TYPES)),
        index_type=draw(st.sampled_from(["uint32", "uint64"])),
        dy_layout=draw(st.sampled_from(LAYOUTS + ["broadcast"])),
        idx_layout=draw(st.sampled_from(LAYOUTS)),
        out_layout=draw(st.sampled_from(LAYOUTS)),
        tuning=draw(st.sampled_from(["cpu", "gpu"])),
        seed=draw(st.integers(0, 2**31)),
    )


@GPU_SETTINGS
@given(case=unpool_cases())
def test_max_unpool_grad_matches_reference(device, case):
    rng = np.random.default_rng(case["seed"])
    dt, sizes, out_sizes = case["data_type"], case["sizes"], case["out_sizes"]
    dy = random_values(dt, out_sizes, rng)
    if case["dy_layout"] == "broadcast":
        dy = np.broadcast_to(dy[:1, :1], dy.shape).copy()
    # many repeats, indices past the end, the type's maximum, UINT64 high words
    idx = random_indices(rng, int(np.prod(sizes)), int(np.prod(out_sizes)), case["index_type"]).reshape(sizes)
    desc = pg.MaxUnpoolingGradDesc(described(dt, out_sizes, case["dy_layout"]),
                                   described(case["index_type"], sizes, case["idx_layout"]),
                                   described(dt, sizes, case["out_layout"]))
    with tuned_for(device, case["tuning"]):
        got = run_output(device, desc, (upload(device, dy, case["dy_layout"]), upload(device, idx, case["idx_layout"])),
                         desc.output_gradient)
    assert same_bits(got, reference.max_unpool_grad(dy, idx))


# -- the rules, by example ------------------------------------------------------------------


@pytest.mark.parametrize("data_type", FLOAT_TYPES)
def test_adaptive_max_pool_grad_ties_go_to_the_lowest_index_and_nan_wins(device, data_type):
    # 1-D, 7 inputs to 3 overlapping bins [0, 3), [2, 5), [4, 7)
    x = np.array([[[1, 5, 5, 2, 2, 0, 0], [1, np.nan, 9, np.nan, 3, np.inf, np.inf]]], data_type.numpy)
    dy = np.array([[[1, 2, 4], [8, 16, 32]]], data_type.numpy)
    dx = pg.adaptive_max_pool_grad(x, dy, device=device)
    # bins [1, 5, 5] -> index 1 (the first 5), [5, 2, 2] -> 2, [2, 0, 0] -> 4;
    # [1, nan, 9] -> 1, [9, nan, 3] -> 3 (NaN above 9), [3, inf, inf] -> 5
    want = np.array([[[0, 1, 2, 0, 4, 0, 0], [0, 8, 0, 16, 0, 32, 0]]], np.float64)
    np.testing.assert_array_equal(dx.astype(np.float64), want)
    np.testing.assert_array_equal(dx.astype(np.float64), reference.adaptive_max_pool_grad(x, dy))


def test_adaptive_max_pool_grad_sums_bins_sharing_an_argmax(device):
    # 2 inputs to 5 bins [0, 1), [0, 1), [0, 2), [1, 2), [1, 2): input 0 is the argmax of
    # the first three, input 1 of the last two
    x = np.array([[[3.0, 1.0]]], np.float32)
    dy = np.array([[[1, 2, 4, 8, 16]]], np.float32)
    want = reference.adaptive_max_pool_grad(x, dy)
    assert want[0, 0, 0] == 1 + 2 + 4 and want[0, 0, 1] == 8 + 16
    np.testing.assert_array_equal(pg.adaptive_max_pool_grad(x, dy, device=device), want)


def test_adaptive_average_pool_grad_divides_by_each_bins_count(device):
    # 5 inputs to 3 bins [0, 2), [1, 4), [3, 5): counts 2, 3, 2
    dy = np.array([[[6.0, 9.0, 4.0]]], np.float32)
    dx = pg.adaptive_average_pool_grad(dy, (1, 1, 5), device=device)
    np.testing.assert_array_equal(dx, [[[3, 3 + 3, 3, 3 + 2, 2]]])


@pytest.mark.parametrize("index_type", ["uint32", "uint64", "int64", "int32"])
def test_max_unpool_grad_gives_losers_and_outside_indices_zero(device, index_type):
    dy = np.arange(1, 9, dtype=np.float32).reshape(1, 2, 4)   # 8 elements
    idx = np.array([[[3, 5, 3, 100], [7, -1 if index_type.startswith("int") else 8, 0, 0]]], index_type)
    dx = pg.max_unpool_grad(dy, idx, device=device)
    # j = 0 lost index 3 to j = 2; 100 and -1 / 8 lie outside; j = 6 lost index 0 to j = 7
    np.testing.assert_array_equal(dx, [[[0, 6, 4, 0], [8, 0, 0, 1]]])
    assert same_bits(dx, reference.max_unpool_grad(dy, idx))


@pytest.mark.parametrize("index_type", ["uint32", "uint64"])
@pytest.mark.parametrize("data_type", ALL_TYPES, ids=lambda t: t.name)
def test_max_unpool_grad_copies_every_type_exactly(device, data_type, index_type):
    rng = np.random.default_rng(int(data_type))
    dy = random_values(data_type, (2, 3, 6, 8), rng)   # extremes, NaN payloads, signed zeros
    idx = random_indices(rng, 2 * 3 * 5 * 5, dy.size, index_type).reshape(2, 3, 5, 5)
    assert same_bits(pg.max_unpool_grad(dy, idx, device=device), reference.max_unpool_grad(dy, idx))


def test_max_unpool_grad_is_the_transpose_of_max_unpool(device):
    # <max_unpool(x), dy> = <x, max_unpool_grad(dy)>, indices with repeats and outside ones
    rng = np.random.default_rng(5)
    x = rng.integers(-8, 9, (2, 3, 5, 4)).astype(np.float32)
    out_sizes = (2, 3, 7, 6)
    idx = random_indices(rng, x.size, int(np.prod(out_sizes)), "uint32").reshape(x.shape)
    dy = rng.integers(-8, 9, out_sizes).astype(np.float32)
    y = pg.max_unpool(x, idx, out_sizes, device=device)
    dx = pg.max_unpool_grad(dy, idx, device=device)
    assert float((y * dy).sum()) == float((x * dx).sum())


# -- determinism, kernels, tensors in ---------------------------------------------------------


@pytest.mark.parametrize("data_type", FLOAT_TYPES, ids=lambda t: t.name)
def test_the_gradients_are_bit_identical_run_after_run(device, data_type):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 17, 19)).astype(data_type.numpy)
    x[:, :, ::3, ::2] = 1.5   # many ties
    dy = rng.standard_normal((2, 3, 6, 7)).astype(data_type.numpy)   # overlapping bins
    runs = [pg.adaptive_max_pool_grad(x, dy, device=device) for _ in range(3)]
    assert all(same_bits(r, runs[0]) for r in runs[1:])
    runs = [pg.adaptive_average_pool_grad(dy, x.shape, device=device) for _ in range(3)]
    assert all(same_bits(r, runs[0]) for r in runs[1:])
    assert_gradient_close(runs[0], reference.adaptive_average_pool_grad(dy, x.shape), dy)
    idx = rng.integers(0, dy.size // 4, x.shape).astype(np.uint32)   # each index repeated ~20 times
    runs = [pg.max_unpool_grad(dy, idx, device=device) for _ in range(3)]
    assert all(same_bits(r, runs[0]) for r in runs[1:])
    assert same_bits(runs[0], reference.max_unpool_grad(dy, idx))


def test_the_programs_are_gathers():
    x, dy = pg.TensorDesc(F32, (2, 3, 9, 9)), pg.TensorDesc(F32, (2, 3, 4, 5))
    files = lambda desc: [p.kernel.file for p in kernels.program_for(desc).passes]  # noqa: E731
    assert files(pg.AdaptiveMaxPoolingGradDesc(x, dy)) == ["adaptive_bins.wgsl", "max_pool.wgsl",
                                                           "adaptive_max_pool_grad.wgsl"]
    assert files(pg.AdaptiveAveragePoolingGradDesc(dy, x)) == ["adaptive_average_pool_grad.wgsl"]
    assert files(pg.MaxUnpoolingGradDesc(x, pg.TensorDesc("uint32", (2, 3, 4, 5)))) == \
        ["max_unpool_winners.wgsl", "max_unpool_grad.wgsl"]


def test_the_gradients_tensor_in_tensor_out(device):
    x = device.upload(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))
    dy = device.upload(np.ones((1, 1, 2, 2), np.float32))
    dx = pg.adaptive_max_pool_grad(x, dy)
    assert isinstance(dx, pg.Tensor) and dx.device is device
    np.testing.assert_array_equal(dx.numpy()[0, 0], [[0, 0, 0, 0], [0, 1, 0, 1], [0, 0, 0, 0], [0, 1, 0, 1]])
    dx = pg.adaptive_average_pool_grad(dy, (1, 1, 4, 4))
    assert isinstance(dx, pg.Tensor)
    np.testing.assert_array_equal(dx.numpy(), np.full((1, 1, 4, 4), 0.25, np.float32))
    dx = pg.max_unpool_grad(dy, device.upload(np.array([0, 3, 3, 9], np.uint32).reshape(1, 1, 2, 2)))
    assert isinstance(dx, pg.Tensor)
    np.testing.assert_array_equal(dx.numpy().ravel(), [1, 0, 1, 0])


def test_gradients_fold_many_rows_over_the_grid(device):
    # N * C above 65535 planes: the flat grid folds over workgroups y
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 40000, 3)).astype(np.float32)
    dy = rng.standard_normal((2, 40000, 2)).astype(np.float32)
    np.testing.assert_array_equal(pg.adaptive_max_pool_grad(x, dy, device=device),
                                  reference.adaptive_max_pool_grad(x, dy).astype(np.float32))
    assert_gradient_close(pg.adaptive_average_pool_grad(dy, x.shape, device=device),
                          reference.adaptive_average_pool_grad(dy, x.shape), dy)
    idx = rng.integers(0, dy.size + 10, x.shape).astype(np.uint32)
    assert same_bits(pg.max_unpool_grad(dy, idx, device=device), reference.max_unpool_grad(dy, idx))


# -- validation (no GPU) ---------------------------------------------------------------------

X = pg.TensorDesc(F32, (2, 3, 8, 8))
DY = pg.TensorDesc(F32, (2, 3, 3, 5))
IDX = pg.TensorDesc("uint32", (2, 3, 8, 8))


def test_descriptions_fill_in_their_outputs():
    d = pg.AdaptiveMaxPoolingGradDesc(X, DY)
    assert d.output_gradient == X and d.input_tensors() == (("input", X), ("input_gradient", DY))
    assert d.output_tensors() == (("output_gradient", X),) and d == pg.AdaptiveMaxPoolingGradDesc(X, DY, X)
    a = pg.AdaptiveAveragePoolingGradDesc(DY, X)
    assert a.input_tensors() == (("input_gradient", DY),) and a.output_tensors() == (("output_gradient", X),)
    u = pg.MaxUnpoolingGradDesc(DY, IDX)
    assert u.output_gradient == X and u.input_tensors() == (("input_gradient", DY), ("indices", IDX))
    assert pg.MaxUnpoolingGradDesc(pg.TensorDesc("int8", DY.sizes), IDX).output_gradient.data_type == pg.DataType.INT8


@pytest.mark.parametrize("make, field", [
    (lambda: pg.AdaptiveMaxPoolingGradDesc(pg.TensorDesc("int32", X.sizes), pg.TensorDesc("int32", DY.sizes)),
     "input.data_type"),
    (lambda: pg.AdaptiveMaxPoolingGradDesc("x", DY), "input"),
    (lambda: pg.AdaptiveMaxPoolingGradDesc(X, None), "input_gradient"),
    (lambda: pg.AdaptiveMaxPoolingGradDesc(X, pg.TensorDesc(F16, DY.sizes)), "input_gradient.data_type"),
    (lambda: pg.AdaptiveMaxPoolingGradDesc(X, pg.TensorDesc(F32, (2, 4, 3, 5))), "input_gradient.sizes"),
    (lambda: pg.AdaptiveMaxPoolingGradDesc(X, pg.TensorDesc(F32, (2, 3, 3))), "input_gradient.sizes"),
    (lambda: pg.AdaptiveMaxPoolingGradDesc(X, DY, DY), "output_gradient.sizes"),
    (lambda: pg.AdaptiveMaxPoolingGradDesc(X, DY, pg.TensorDesc(F16, X.sizes)), "output_gradient.data_type"),
    (lambda: pg.AdaptiveMaxPoolingGradDesc(X, DY, pg.TensorDesc(F32, X.sizes, (0, 64, 8, 1))),
     "output_gradient.strides"),
    (lambda: pg.AdaptiveAveragePoolingGradDesc(DY), "output_gradient"),
    (lambda: pg.AdaptiveAveragePoolingGradDesc(DY, pg.TensorDesc("uint8", X.sizes)), "output_gradient.data_type"),
    (lambda: pg.AdaptiveAveragePoolingGradDesc(DY, pg.TensorDesc(F32, X.sizes, (64, 0, 8, 1))),
     "output_gradient.strides"),
    (lambda: pg.AdaptiveAveragePoolingGradDesc(pg.TensorDesc(F16, DY.sizes), X), "input_gradient.data_type"),
    (lambda: pg.AdaptiveAveragePoolingGradDesc(pg.TensorDesc(F32, (1, 3, 3, 5)), X), "input_gradient.sizes"),
    (lambda: pg.MaxUnpoolingGradDesc(DY, pg.TensorDesc("int32", IDX.sizes)), "indices.data_type"),
    (lambda: pg.MaxUnpoolingGradDesc(DY, pg.TensorDesc("uint32", (2, 2, 8, 8))), "indices.sizes"),
    (lambda: pg.MaxUnpoolingGradDesc(DY, pg.TensorDesc("uint32", (2, 3, 8, 8, 1))), "indices.sizes"),
    (lambda: pg.MaxUnpoolingGradDesc(DY, IDX, pg.TensorDesc(F16, X.sizes)), "output_gradient.data_type"),
    (lambda: pg.MaxUnpoolingGradDesc(DY, IDX, pg.TensorDesc(F32, (2, 3, 8, 7))), "output_gradient.sizes"),
    (lambda: pg.MaxUnpoolingGradDesc(3, IDX), "input_gradient"),
])
def test_validation_names_the_field(make, field):
    with pytest.raises(pg.ValidationError) as e:
        make()
    assert e.value.field == field
    assert str(e.value).startswith(field)


def test_functional_gradients_validate_before_running(device):
    with pytest.raises(pg.ValidationError) as e:
        pg.adaptive_max_pool_grad(np.zeros((1, 1, 4), np.float32), np.zeros((1, 2, 2), np.float32), device=device)
    assert e.value.field == "input_gradient.sizes"
    with pytest.raises(pg.ValidationError) as e:
        pg.adaptive_average_pool_grad(np.zeros((1, 1, 2), np.float64), (1, 1, 4), device=device)
    assert "float64" in str(e.value)
    with pytest.raises(pg.ValidationError) as e:
        pg.max_unpool_grad(np.zeros((1, 1, 4), np.float32), np.zeros((1, 1, 2), np.float32), device=device)
    assert e.value.field == "indices.data_type"


# -- PyTorch's autograd -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("dims, shape, output_size", [
    (1, (2, 3, 11), (4,)),
    (1, (2, 3, 5), (9,)),              # more bins than inputs: every input in several bins
    (2, (2, 3, 9, 8), (4, 3)),
    (2, (1, 4, 10, 10), (5, 5)),       # uniform bins
    (3, (1, 2, 5, 6, 7), (3, 4, 2)),
])
def test_adaptive_gradients_match_pytorch(device, kind, dims, shape, output_size):
    torch = pytest.importorskip("torch")
    pool = getattr(torch.nn.functional, f"adaptive_{kind}_pool{dims}d")
    rng = np.random.default_rng(dims * 10 + shape[-1])
    x = rng.permutation(int(np.prod(shape))).reshape(shape).astype(np.float32)   # no ties
    xt = torch.tensor(x, requires_grad=True)
    y = pool(xt, output_size)
    dy = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    y.backward(torch.tensor(dy))
    if kind == "max":
        dx = pg.adaptive_max_pool_grad(x, dy, device=device)
    else:
        dx = pg.adaptive_average_pool_grad(dy, shape, device=device)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dims, shape, kernel", [(1, (2, 3, 12), 2), (2, (2, 3, 8, 9), 3), (3, (1, 2, 4, 6, 6), 2)])
def test_max_unpool_gradient_matches_pytorch(device, dims, shape, kernel):
    # disjoint windows (stride = kernel): no index repeats (PyTorch's backward gives a
    # repeated index's dy to every j naming it; poolgpu only to the one that reached the output)
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(dims)
    pooled, indices = getattr(F, f"max_pool{dims}d")(torch.tensor(rng.standard_normal(shape).astype(np.float32)),
                                                     kernel, return_indices=True)
    xt = pooled.detach().clone().requires_grad_(True)
    y = getattr(F, f"max_unpool{dims}d")(xt, indices, kernel, output_size=shape[2:])
    dy = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    y.backward(torch.tensor(dy))
    # PyTorch's indices count within each (n, c) plane; poolgpu's over the whole output
    plane = int(np.prod(shape[2:]))
    flat = indices.numpy() + (np.arange(shape[0] * shape[1]) * plane).reshape(shape[:2] + (1,) * dims)
    dx = pg.max_unpool_grad(dy, flat, device=device)   # int64 indices, as PyTorch's
    np.testing.assert_array_equal(dx, xt.grad.numpy())

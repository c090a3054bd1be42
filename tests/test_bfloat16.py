"""bfloat16 (pg.DataType.BFLOAT16, ml_dtypes.bfloat16 arrays) on every adapter, against
PyTorch's CPU kernels on torch.bfloat16 for every family: maxima, indices and averages bit
for bit (sums in float32, rounded once, as PyTorch's CPU kernels round them), Lp pooling and
the gradients within bfloat16's rounding; ONNX's operators on bfloat16; and the rounding
itself (to nearest even, overflow to infinity, the canonical NaN)."""

import numpy as np
import pytest

import poolgpu as pg
import reference
from helpers import same_bits

ml_dtypes = pytest.importorskip("ml_dtypes")
torch = pytest.importorskip("torch")
F = torch.nn.functional
BF16 = ml_dtypes.bfloat16


def to_torch(x):
    """An ml_dtypes.bfloat16 array as a torch.bfloat16 tensor (the same bits)."""
    return torch.from_numpy(np.ascontiguousarray(x).view(np.int16)).view(torch.bfloat16)


def from_torch(t):
    return t.detach().contiguous().view(torch.int16).numpy().view(BF16)


def bf16(rng, shape, scale=3.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(BF16)


def assert_bits(got, want):
    assert got.dtype == BF16 and same_bits(got.view(np.uint16), want.view(np.uint16)), \
        f"{np.count_nonzero(got.view(np.uint16) != want.view(np.uint16))} elements differ"


def assert_within_rounding(got, want, ulps=2):
    """Within ``ulps`` bfloat16 ulps of PyTorch's (which rounds intermediate results to
    bfloat16 where poolgpu keeps float32), of the result or of the largest result (sums that
    cancel keep PyTorch's intermediate roundings)."""
    got, want = got.astype(np.float64), np.asarray(want).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=ulps * 2.0**-8, atol=ulps * 2.0**-8 * np.abs(want).max(initial=0))


def test_forward_families_match_pytorch(device):
    rng = np.random.default_rng(0)
    x = bf16(rng, (2, 3, 13, 11))
    t = to_torch(x)
    # max pooling, values and per-plane indices
    y, i = pg.max_pool(x, (3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1), return_indices=True,
                       device=device)
    ty, ti = F.max_pool2d(t, 3, 2, 1, return_indices=True)
    assert_bits(y, from_torch(ty))
    assert np.array_equal(i % (13 * 11), ti.numpy())
    # averages: float32 sums and one rounding, PyTorch's CPU bits
    for kernel, stride, padding, include in ((3, 2, 1, True), (2, 2, 0, True), (3, 1, 1, False), (5, 3, 2, True)):
        a = pg.average_pool(x, kernel, strides=stride, start_padding=padding, end_padding=padding,
                            include_padding=include, device=device)
        assert_bits(a, from_torch(F.avg_pool2d(t, kernel, stride, padding, count_include_pad=include)))
    x1 = bf16(rng, (2, 3, 30))   # (PyTorch's CPU avg_pool3d takes no bfloat16)
    assert_bits(pg.average_pool(x1, (4,), strides=(3,), start_padding=(2,), end_padding=(2,), include_padding=True,
                                device=device), from_torch(F.avg_pool1d(to_torch(x1), 4, 3, 2)))
    # adaptive pooling
    for out in ((4, 5), (13, 11), (1, 1), (6, 3)):
        assert_bits(pg.adaptive_average_pool(x, out, device=device), from_torch(F.adaptive_avg_pool2d(t, out)))
        y, i = pg.adaptive_max_pool(x, out, return_indices=True, device=device)
        ty, ti = F.adaptive_max_pool2d(t, out, return_indices=True)
        assert_bits(y, from_torch(ty))
        assert np.array_equal(i % (13 * 11), ti.numpy())
    # Lp pooling: PyTorch rounds x ** p and the mean to bfloat16 before the root
    xp = np.abs(x)
    for p in (1, 2, 3):
        got = pg.lp_pool(xp, (2, 3), strides=(2, 2), p=p, device=device)
        assert_within_rounding(got, from_torch(F.lp_pool2d(to_torch(xp), p, (2, 3), 2)), ulps=4)
    # max unpooling of PyTorch's own indices
    ty, ti = F.max_pool2d(t, 2, 2, return_indices=True)
    plane = np.arange(2 * 3).reshape(2, 3, 1, 1) * (13 * 11)
    u = pg.max_unpool(from_torch(ty), ti.numpy() + plane, (13, 11), device=device)
    assert_bits(u, from_torch(F.max_unpool2d(ty, ti, 2, 2, output_size=(13, 11))))


def test_fractional_max_pool_matches_pytorch(device):
    # PyTorch's CPU kernel computes the windows in bfloat16, every step rounded
    rng = np.random.default_rng(1)
    for shape, kernel, out in (((2, 3, 25, 19), (3, 2), (9, 11)), ((1, 2, 300, 40), (2, 2), (170, 29)),
                               ((1, 2, 9, 10, 11), (2, 3, 2), (5, 4, 7))):
        x = bf16(rng, shape)
        u = rng.random(shape[:2] + (len(kernel),)).astype(np.float32).astype(BF16)
        u = np.minimum(u, BF16(0.99609375))
        pool = F.fractional_max_pool2d if len(kernel) == 2 else F.fractional_max_pool3d
        ty, ti = pool(to_torch(x), kernel, output_size=out, return_indices=True, _random_samples=to_torch(u))
        y, i = pg.fractional_max_pool(x, kernel, out, u, return_indices=True, device=device)
        assert_bits(y, from_torch(ty))
        assert np.array_equal(i % np.prod(shape[2:]), ti.numpy())


def test_roi_pool_matches_torchvisions_arithmetic(device):
    # torchvision is not needed: its CPU kernel's arithmetic (tests/reference.py) on the
    # bfloat16 values, whose maxima are exact in float32
    rng = np.random.default_rng(2)
    x = bf16(rng, (2, 3, 12, 14))
    rois = np.array([[0, 1, 1, 9, 7], [1, 0, 2, 13, 11], [0, 5, 5, 5, 5], [1, 2, 3, 7, 6]], np.float32)
    want = reference.torchvision_roi_pool(x.astype(np.float32), rois, (3, 2))
    got = pg.roi_pool(x, rois, (3, 2), device=device)   # these ROIs' bins agree between the two formulas
    assert_bits(got, want.astype(BF16))
    # ROIs of bfloat16 too (the input's type, as DirectML and ONNX's MaxRoiPool have them)
    assert_bits(pg.roi_pool(x, rois.astype(BF16), (3, 2), device=device), want.astype(BF16))


def grads_of(function, x, *args, **kwargs):
    """PyTorch's gradient of ``function(x, ...)`` for dy = the output's shape of ones times
    a ramp, and that dy."""
    tx = to_torch(x).requires_grad_()
    y = function(tx, *args, **kwargs)
    y = y[0] if isinstance(y, tuple) else y
    dy = (torch.arange(y.numel(), dtype=torch.float32).reshape(y.shape) % 7 - 3).to(torch.bfloat16)
    y.backward(dy)
    return from_torch(tx.grad), from_torch(dy)


def test_gradients_match_pytorch(device):
    rng = np.random.default_rng(3)
    x = bf16(rng, (2, 3, 10, 12))
    # max pooling: disjoint windows, one dy per element: PyTorch's bits
    want, dy = grads_of(F.max_pool2d, x, 2, 2)
    assert_bits(pg.max_pool_grad(x, dy, (2, 2), strides=(2, 2), device=device), want)
    # overlapping windows: sums (small integers here, exact in bfloat16 as in float32)
    want, dy = grads_of(F.max_pool2d, x, 3, 1, 1)
    assert_bits(pg.max_pool_grad(x, dy, (3, 3), start_padding=(1, 1), end_padding=(1, 1), device=device), want)
    want, dy = grads_of(F.avg_pool2d, x, 3, 2, 1)
    got = pg.average_pool_grad(dy, x.shape, (3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1),
                               include_padding=True, device=device)
    assert_within_rounding(got, want)
    want, dy = grads_of(F.adaptive_max_pool2d, x, (4, 5))
    assert_bits(pg.adaptive_max_pool_grad(x, dy, device=device), want)
    want, dy = grads_of(F.adaptive_avg_pool2d, x, (4, 5))
    assert_within_rounding(pg.adaptive_average_pool_grad(dy, x.shape, device=device), want)
    xp = np.abs(x) + BF16(0.25)
    for p in (1, 2, 3):
        want, dy = grads_of(F.lp_pool2d, xp, p, 2, 2)
        assert_within_rounding(pg.lp_pool_grad(xp, dy, (2, 2), strides=(2, 2), p=p, device=device), want, ulps=8)
    u = np.full((2, 3, 2), 0.5, np.float32).astype(BF16)
    want, dy = grads_of(F.fractional_max_pool2d, x, 2, output_size=(6, 7), _random_samples=to_torch(u))
    assert_bits(pg.fractional_max_pool_grad(x, dy, (2, 2), u, device=device), want)
    rois = np.array([[0, 1, 1, 9, 7], [1, 0, 2, 11, 9]], np.float32)
    dy = bf16(rng, (2, 3, 2, 2))
    want = reference.torchvision_roi_pool_grad(x.astype(np.float32), rois, dy.astype(np.float32), (2, 2))
    assert_bits(pg.roi_pool_grad(x, rois, dy, (2, 2), device=device), want.astype(BF16))
    y, i = pg.max_pool(x, (2, 2), strides=(2, 2), return_indices=True, device=device)
    assert_bits(pg.max_unpool_grad(x, i, device=device), y)


def test_rounding(device):
    # averages of two bfloat16 values: exact in float32, so the result is their correctly
    # rounded mean (ties to even), a NaN the canonical quiet NaN
    big = np.uint32(0x7F7F0000).view(np.float32)   # the largest bfloat16
    pairs = [(1, 1 + 2**-7), (1, 1 + 3 * 2**-7), (-1, -(1 + 2**-7)), (big, big), (-big, -big), (np.inf, -np.inf),
             (np.nan, 1), (2**-133, 0), (3 * 2**-133, 0), (1e-40, 3e-40)]
    x = np.array(pairs, np.float32).astype(BF16).reshape(1, len(pairs), 2)
    y = pg.adaptive_average_pool(x, (1,), device=device)[..., 0]
    with np.errstate(invalid="ignore", over="ignore"):   # (inf - inf, and the overflowing sum)
        mean = (x[..., 0].astype(np.float32) + x[..., 1].astype(np.float32)) / np.float32(2)
    expected = mean.astype(BF16).view(np.uint16).copy()
    expected[np.isnan(mean)] = 0x7FC0
    assert same_bits(y.view(np.uint16), expected)
    # (the largest bfloat16 twice: its float32 sum overflows, as PyTorch's does)
    assert y.view(np.uint16)[0, 3] == 0x7F80 and np.isnan(y[0, 5].astype(np.float32))
    # maxima keep their bits: NaN payloads, signed zeros
    bits = np.array([[[0x7FC1, 0x0000, 0x8000, 0xFF81, 0x3F80, 0xBF80]]], np.uint16)
    m = pg.max_pool(bits.view(BF16), (2,), strides=(2,), device=device)
    assert m.view(np.uint16).tolist() == [[[0x7FC1, 0xFF81, 0x3F80]]]


def test_onnx_operators_take_bfloat16(device):
    from poolgpu import onnx as pgo
    rng = np.random.default_rng(4)
    x = bf16(rng, (1, 2, 7, 9))
    f = x.astype(np.float32)
    # the float32 operator on the same values, rounded once: the bfloat16 operator's bits
    for name, kwargs in (("max_pool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
                         ("average_pool", dict(kernel_shape=[2, 3], count_include_pad=1, ceil_mode=1)),
                         ("lp_pool", dict(kernel_shape=[2, 2], p=2))):
        op = getattr(pgo, name)
        assert_bits(op(x, **kwargs, device=device), op(f, **kwargs, device=device).astype(BF16))
    for name in ("global_max_pool", "global_average_pool", "global_lp_pool"):
        op = getattr(pgo, name)
        assert_bits(op(x, device=device), op(f, device=device).astype(BF16))
    y, i = pgo.max_pool(x[..., :8], kernel_shape=[2, 2], strides=[2, 2], return_indices=True, device=device)
    assert_bits(pgo.max_unpool(y, i, kernel_shape=[2, 2], strides=[2, 2], output_shape=[1, 2, 7, 8], device=device),
                pgo.max_unpool(y.astype(np.float32), i, kernel_shape=[2, 2], strides=[2, 2], output_shape=[1, 2, 7, 8],
                               device=device).astype(BF16))
    rois = np.array([[0, 1, 1, 6, 5], [0, 0, 2, 8, 6]], np.float32)
    assert_bits(pgo.max_roi_pool(x, rois.astype(BF16), pooled_shape=[2, 3], device=device),
                pgo.max_roi_pool(f, rois, pooled_shape=[2, 3], device=device).astype(BF16))
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    node = helper.make_node("AveragePool", ["X"], ["Y"], kernel_shape=[2, 2], strides=[2, 2])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", TensorProto.BFLOAT16, list(x.shape))],
                              [helper.make_tensor_value_info("Y", TensorProto.BFLOAT16, [1, 2, 3, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    onnx.checker.check_model(model)   # bfloat16 is in AveragePool's type constraint (opset 22)
    from onnx.reference import ReferenceEvaluator
    want = ReferenceEvaluator(model).run(None, {"X": x})[0]
    got = pgo.run_node(node, [x], device=device)[0]
    assert got.dtype == BF16
    assert_within_rounding(got, want.astype(np.float32), ulps=1)


def test_without_ml_dtypes_the_error_says_how(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)
    with pytest.raises(pg.ValidationError, match="pip install ml_dtypes"):
        pg.DataType.BFLOAT16.numpy
    assert pg.DataType.BFLOAT16.size == 2 and pg.DataType.of("bfloat16") is pg.DataType.BFLOAT16
    with pytest.raises(pg.ValidationError, match="ml_dtypes.bfloat16"):   # a torch tensor: NumPy cannot read it
        pg.max_pool(torch.zeros(1, 1, 4, dtype=torch.bfloat16), 2)

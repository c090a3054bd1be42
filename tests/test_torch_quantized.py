"""Quantized tensors (per-tensor quint8 and qint8) through poolgpu.torch's max_pool2d,
avg_pool2d and adaptive_avg_pool2d: PyTorch's own quantized results, bit for bit, contiguous
and channels_last (its vectorised channels as this process's PyTorch vectorises them), with
its scale, zero point and layout; the one documented difference; and what is refused."""

import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import poolgpu as pg  # noqa: E402
import poolgpu.torch as pgt  # noqa: E402

F = torch.nn.functional
pytestmark = pytest.mark.filterwarnings("ignore:.*quantize.*:UserWarning")   # (torch 2.13 deprecates them)


def quantized(rng, shape, dtype, channels_last=False):
    scale = float(rng.uniform(0.01, 1))
    zero = int(rng.integers(0, 256)) if dtype == torch.quint8 else int(rng.integers(-128, 128))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = torch.quantize_per_tensor(torch.from_numpy(rng.standard_normal(shape).astype(np.float32) * 3), scale, zero,
                                      dtype)
    return q.contiguous(memory_format=torch.channels_last) if channels_last else q


def assert_same(got, want):
    assert got.is_quantized and got.dtype == want.dtype and got.shape == want.shape
    assert (got.q_scale(), got.q_zero_point()) == (want.q_scale(), want.q_zero_point())
    for fmt in (torch.contiguous_format, torch.channels_last):
        assert got.is_contiguous(memory_format=fmt) == want.is_contiguous(memory_format=fmt)
    assert torch.equal(got.int_repr(), want.int_repr()), (got.int_repr() != want.int_repr()).sum()


def _cases():
    rng = np.random.default_rng(21)
    for i in range(12):
        dtype = (torch.quint8, torch.qint8)[i % 2]
        channels = (1, 3, 8, 19)[i % 4]   # (C = 1: PyTorch's channels_last kernels; 19: 16 vectorised, 3 not)
        h, w = (int(v) for v in rng.integers(3, 12, 2))
        k = int(rng.integers(1, min(h, w) + 1))
        yield pytest.param(dict(dtype=dtype, shape=(2, channels, h, w), channels_last=i % 3 == 1, kernel=k,
                                stride=int(rng.integers(1, 3)), padding=int(rng.integers(0, k // 2 + 1)),
                                ceil_mode=bool(i % 2), count_include_pad=i % 4 < 2,
                                divisor_override=(None, None, 3, -2)[i % 4],
                                output_size=(int(rng.integers(1, h + 1)), int(rng.integers(1, w + 1))), seed=i),
                           id=f"{'cl' if i % 3 == 1 else 'nchw'}-c{channels}-{i}")


@pytest.mark.parametrize("case", list(_cases()))
def test_pytorchs_quantized_pooling_bit_for_bit(device, case):
    q = quantized(np.random.default_rng(case["seed"]), case["shape"], case["dtype"], case["channels_last"])
    window = (case["kernel"], case["stride"], case["padding"])
    assert_same(pgt.max_pool2d(q, *window, 1, case["ceil_mode"], device=device),
                F.max_pool2d(q, *window, 1, case["ceil_mode"]))
    average = window + (case["ceil_mode"], case["count_include_pad"], case["divisor_override"])
    assert_same(pgt.avg_pool2d(q, *average, device=device), F.avg_pool2d(q, *average))
    assert_same(pgt.adaptive_avg_pool2d(q, case["output_size"], device=device),
                F.adaptive_avg_pool2d(q, case["output_size"]))


def test_unbatched_inputs_modules_and_none_sizes(device):
    rng = np.random.default_rng(22)
    q = quantized(rng, (3, 7, 9), torch.quint8)
    assert_same(pgt.avg_pool2d(q, 2, device=device), F.avg_pool2d(q, 2))
    assert_same(pgt.adaptive_avg_pool2d(q, (None, 4), device=device), F.adaptive_avg_pool2d(q, (None, 4)))
    assert_same(pgt.nn.MaxPool2d(3, 2, 1, device=device)(q), F.max_pool2d(q, 3, 2, 1))
    assert_same(pgt.nn.AdaptiveAvgPool2d(1, device=device)(q), F.adaptive_avg_pool2d(q, 1))


def test_channels_last_adaptive_differs_only_where_pytorch_fuses_its_multiply_add(device):
    # PyTorch's vectorised channels_last adaptive average computes A * m + zero with one
    # rounding (a fused multiply-add); its other kernels, and poolgpu, round the product first
    # (docs/torch.md).  Bins of 6 int8 values summing to -381 with zero point -128:
    # A = -381 + 6 * 128 = 387, A * (1 / 6) = 64.5000019 rounds to 64.5 in float32, and
    # 64.5 - 128 = -63.5 to -64; fused, 64.5000019 - 128 rounds to -63.
    lanes = {"AVX2": 8, "AVX512": 16}.get(torch.backends.cpu.get_cpu_capability())
    if lanes is None:
        pytest.skip("PyTorch vectorises no quantized channels on this CPU")
    plane = torch.tensor([[-64, -64, -64], [-64, -64, -61]], dtype=torch.int8)
    values = plane.expand(1, lanes + 1, 2, 3).contiguous(memory_format=torch.channels_last)
    q = torch._make_per_tensor_quantized_tensor(values, 0.1, -128)
    want = F.adaptive_avg_pool2d(q, 1).int_repr().flatten().tolist()
    got = pgt.adaptive_avg_pool2d(q, 1, device=device).int_repr().flatten().tolist()
    assert want == [-63] * lanes + [-64] and got == [-64] * (lanes + 1)
    # ... and only there: random inputs, every difference one of these
    rng = np.random.default_rng(23)
    for _ in range(4):
        q = quantized(rng, (2, 2 * lanes, 8, 12), torch.qint8, channels_last=True)
        want = F.adaptive_avg_pool2d(q, (4, 4)).int_repr().numpy().astype(np.int64)
        got = pgt.adaptive_avg_pool2d(q, (4, 4), device=device).int_repr().numpy().astype(np.int64)
        a = (q.int_repr().numpy().astype(np.int64).reshape(2, 2 * lanes, 4, 2, 4, 3).sum(axis=(3, 5))
             - 6 * q.q_zero_point()).astype(np.float32)
        fused = np.rint((a.astype(np.float64) * np.float64(np.float32(1) / np.float32(6)) + q.q_zero_point())
                        .astype(np.float32))
        differ = got != want
        assert np.array_equal(want[differ], fused[differ]) and np.abs(got - want).max(initial=0) <= 1


def test_what_pytorch_refuses_or_poolgpu_does_not_take(device):
    rng = np.random.default_rng(24)
    q = quantized(rng, (1, 2, 6, 6), torch.quint8)
    with pytest.raises(pg.ValidationError, match="return_indices"):   # (PyTorch has no quantized indices)
        pgt.max_pool2d(q, 2, return_indices=True, device=device)
    with pytest.raises(pg.ValidationError, match="per-tensor"):
        pgt.avg_pool2d(torch.quantize_per_channel(torch.rand(1, 2, 6, 6), torch.tensor([0.1, 0.2]),
                                                  torch.tensor([0, 3]), 1, torch.quint8), 2, device=device)
    with pytest.raises(pg.ValidationError, match="quint8 or torch.qint8"):
        pgt.avg_pool2d(torch.quantize_per_tensor(torch.rand(1, 2, 6, 6), 0.1, 0, torch.qint32), 2, device=device)
    for pool in (lambda: pgt.max_pool1d(q[0], 2, device=device), lambda: pgt.avg_pool3d(q[None], 2, device=device),
                 lambda: pgt.lp_pool2d(q, 2, 2, device=device), lambda: pgt.adaptive_max_pool2d(q, 2, device=device)):
        with pytest.raises(pg.ValidationError, match="dequantize"):
            pool()
    with pytest.raises(pg.ValidationError, match="padding"):   # (PyTorch's checks, as for every tensor)
        pgt.avg_pool2d(q, 2, padding=2, device=device)
    one = q[:, :1]
    assert math.isclose(pgt.adaptive_avg_pool2d(one, 1, device=device).dequantize().item(),
                        one.dequantize().mean().item(), abs_tol=q.q_scale())

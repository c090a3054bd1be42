"""poolgpu.torch against PyTorch itself, on every adapter.

- PyTorch's own samples, called unchanged: every OpInfo sample of
  ``nn.functional.{max_pool, avg_pool, adaptive_max_pool, adaptive_avg_pool, max_unpool}{1,2,3}d``
  and ``nn.functional.fractional_max_pool{2,3}d``
  (``torch.testing._internal.common_methods_invocations.op_db``), compared with
  ``torch.nn.functional`` under the same seed (fractional pooling draws its samples):
  maxima and indices exactly, averages within float32 rounding
  (the modules' ModuleInfo samples, Lp's among them: test_torch_nn.py).  By default a
  deterministic subset (every STRIDE-th sample, at most LIMIT per operator);
  ``POOLGPU_TORCH_ALL=1`` runs all of them.  The internal modules are imported
  once, lazily (they take seconds).
- Gradients against PyTorch's, bit-identical run to run; round trips pool -> unpool.
- Argument rules (PyTorch's checks), types, kinds in and out.
"""

import itertools
import os
import subprocess
import sys
import types
import unittest

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import poolgpu as pg  # noqa: E402
import poolgpu.torch as pgt  # noqa: E402

ALL = os.environ.get("POOLGPU_TORCH_ALL") == "1"
STRIDE, LIMIT = 23, 4

FUNCTIONS = [f"{f}{d}d" for f in ("max_pool", "avg_pool", "adaptive_max_pool", "adaptive_avg_pool", "max_unpool")
             for d in (1, 2, 3)] + ["fractional_max_pool2d", "fractional_max_pool3d"]
EXACT = ("max_pool", "adaptive_max_pool", "max_unpool", "fractional_max_pool")


def _internal():
    """torch's internal test modules, imported once.  They import ``expecttest`` (a test
    dependency of PyTorch, not of poolgpu) only for a TestCase base class: where it is
    missing, a plain unittest.TestCase stands in."""
    if "expecttest" not in sys.modules:
        try:
            import expecttest  # noqa: F401
        except ImportError:
            sys.modules["expecttest"] = types.SimpleNamespace(TestCase=unittest.TestCase)
    from torch.testing._internal import common_methods_invocations, common_modules
    return common_methods_invocations.op_db, common_modules.module_db


_SAMPLES = {}


def _pick(samples):
    return list(samples) if ALL else list(itertools.islice(samples, 0, STRIDE * LIMIT, STRIDE))


def op_samples(name):
    """(variant, sample) pairs of the OpInfos named nn.functional.<name>."""
    if name not in _SAMPLES:
        op_db, _ = _internal()
        ops = [op for op in op_db if op.name == f"nn.functional.{name}"]
        assert ops, f"torch's op_db has no nn.functional.{name}"
        _SAMPLES[name] = [(op.variant_test_name, s) for op in ops for s in _pick(op.sample_inputs("cpu", torch.float32))]
    return _SAMPLES[name]


def _close(got, want):
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_pytorch_opinfo_samples(device, name):
    samples = op_samples(name)
    assert samples
    for seed, (variant, sample) in enumerate(samples):
        torch.manual_seed(seed)   # (fractional pooling draws its samples: the same ones)
        got = getattr(pgt, name)(sample.input, *sample.args, **sample.kwargs, device=device)
        torch.manual_seed(seed)
        want = getattr(F, name)(sample.input, *sample.args, **sample.kwargs)
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert isinstance(g, torch.Tensor) and g.dtype == w.dtype and g.shape == w.shape, (variant, sample)
            if name.startswith(EXACT):
                assert torch.equal(g, w), (variant, sample)
            else:
                _close(g, w)


# -- kinds, types, shapes ----------------------------------------------------------------------


def distinct(shape, seed=0, dtype=torch.float32):
    """Values without ties (so that every argmax is unique)."""
    g = torch.Generator().manual_seed(seed)
    n = int(np.prod(shape))
    return (torch.randperm(n, generator=g).reshape(shape).to(torch.float32) / n - 0.5).to(dtype)


def test_what_comes_in_goes_out(device):
    x = distinct((2, 3, 7, 6))
    y, i = pgt.max_pool2d(x, 3, 2, 1, return_indices=True, device=device)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32 and i.dtype == torch.int64
    yn, in_ = pgt.max_pool2d(x.numpy(), 3, 2, 1, return_indices=True, device=device)
    assert isinstance(yn, np.ndarray) and in_.dtype == np.int64
    yt, it = pgt.max_pool2d(device.upload(x.numpy()), 3, 2, 1, return_indices=True)
    assert isinstance(yt, pg.Tensor) and it.data_type == pg.DataType.INT64
    ty, ti = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    for got in ((y, i), (yn, in_), (yt.numpy(), it.numpy())):
        np.testing.assert_array_equal(np.asarray(got[0]), ty.numpy())
        np.testing.assert_array_equal(np.asarray(got[1]), ti.numpy())


@pytest.mark.parametrize("dtype", [torch.float16, torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64])
def test_max_family_types(device, dtype):
    x = (torch.randperm(2 * 3 * 36).reshape(2, 3, 6, 6) % 100 - (0 if dtype == torch.uint8 else 50)).to(dtype)
    y, i = pgt.max_pool2d(x, 2, 1, return_indices=True, device=device)
    ty, ti = F.max_pool2d(x.float(), 2, 1, return_indices=True)  # PyTorch's CPU pools few integer types
    assert y.dtype == dtype and torch.equal(y, ty.to(dtype)) and torch.equal(i, ti)
    assert torch.equal(pgt.max_unpool2d(y, i, 2, 1, output_size=(6, 6), device=device),
                       F.max_unpool2d(ty, ti, 2, 1, output_size=(6, 6)).to(dtype))
    ay, ai = pgt.adaptive_max_pool2d(x, (4, 5), True, device=device)
    tay, tai = F.adaptive_max_pool2d(x.float(), (4, 5), True)
    assert torch.equal(ay, tay.to(dtype)) and torch.equal(ai, tai)


def test_float16_averages(device):
    x = torch.randn(2, 3, 9, 8).half()
    torch.testing.assert_close(pgt.avg_pool2d(x, 3, 2, 1, device=device), F.avg_pool2d(x.float(), 3, 2, 1).half(),
                               rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(pgt.adaptive_avg_pool2d(x, (4, 3), device=device),
                               F.adaptive_avg_pool2d(x.float(), (4, 3)).half(), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dtype, hint", [(torch.float64, ".float()"), (torch.bool, "torch.uint8"),
                                         (torch.complex64, ".float()")])
def test_bad_types_say_what_to_convert_to(dtype, hint):
    x = torch.zeros(1, 1, 4, 4, dtype=dtype)
    with pytest.raises(pg.ValidationError) as e:
        pgt.max_pool2d(x, 2)
    assert e.value.field == "input" and hint in str(e.value) and str(dtype).rpartition(".")[2] in str(e.value)
    with pytest.raises(pg.ValidationError) as e:
        pgt.avg_pool2d(torch.zeros(1, 1, 4, 4, dtype=torch.int32), 2)
    assert ".float()" in str(e.value)
    with pytest.raises(pg.ValidationError) as e:
        pgt.max_pool2d(np.zeros((1, 1, 4, 4)), 2)
    assert "astype(np.float32)" in str(e.value)


def test_unbatched_and_empty_batches(device):
    x = distinct((3, 7, 9))
    y, i = pgt.max_pool2d(x, 2, return_indices=True, device=device)
    ty, ti = F.max_pool2d(x, 2, return_indices=True)
    assert torch.equal(y, ty) and torch.equal(i, ti)
    assert torch.equal(pgt.max_unpool2d(y, i, 2, output_size=(7, 9), device=device), F.max_unpool2d(ty, ti, 2, output_size=(7, 9)))
    _close(pgt.avg_pool1d(x[0], 3, 2, 1, device=device), F.avg_pool1d(x[0], 3, 2, 1))
    t = pgt.max_pool2d(device.upload(x.numpy()), 2)
    assert t.shape == ty.shape and np.array_equal(np.asarray(t), ty.numpy())
    empty = torch.zeros(0, 3, 7, 9)
    for got, want in ((pgt.max_pool2d(empty, 3, 2, 1, return_indices=True), F.max_pool2d(empty, 3, 2, 1, return_indices=True)),
                      ((pgt.avg_pool2d(empty, 3, 2, 1),), (F.avg_pool2d(empty, 3, 2, 1),)),
                      ((pgt.adaptive_avg_pool2d(empty, 4),), (F.adaptive_avg_pool2d(empty, 4),))):
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype


def test_bad_arguments_name_pytorch_arguments():
    x = torch.zeros(1, 1, 6, 6)
    cases = [
        (lambda: pgt.max_pool2d(x, 3, padding=2), "padding"),
        (lambda: pgt.max_pool2d(x, 0), "kernel_size"),
        (lambda: pgt.max_pool2d(x, 2, stride=0), "stride"),
        (lambda: pgt.max_pool2d(x, 2, dilation=0), "dilation"),
        (lambda: pgt.max_pool2d(x, (2, 2, 2)), "kernel_size"),
        (lambda: pgt.max_pool2d(x, 7), "kernel_size"),
        (lambda: pgt.max_pool2d(torch.zeros(6, 6), 2), "input"),
        (lambda: pgt.max_pool2d(torch.zeros(1, 0, 6, 6), 2), "input"),
        (lambda: pgt.avg_pool2d(x, 2, divisor_override=0), "divisor_override"),
        (lambda: pgt.avg_pool3d(torch.zeros(1, 1, 2, 6, 6), 3, 1, 1), "kernel_size"),
        (lambda: pgt.lp_pool2d(x, 0.5, 2), "norm_type"),
        (lambda: pgt.adaptive_avg_pool2d(x, (2,)), "output_size"),
        (lambda: pgt.adaptive_max_pool2d(x, -1), "output_size"),
        (lambda: pgt.max_unpool2d(x, torch.zeros(1, 1, 6, 6, dtype=torch.int64), 2, output_size=(20, 20)), "output_size"),
        (lambda: pgt.max_unpool2d(x, torch.full((1, 1, 6, 6), 144, dtype=torch.int64), 2), "indices"),
        (lambda: pgt.max_unpool2d(x, torch.zeros(1, 1, 6, 6, dtype=torch.int32), 2), "indices"),
        (lambda: pgt.max_unpool2d(x, torch.zeros(1, 1, 6, 5, dtype=torch.int64), 2), "indices"),
    ]
    for call, field in cases:
        with pytest.raises(pg.ValidationError) as e:
            call()
        assert e.value.field == field, (field, str(e.value))


# Argument forms PyTorch's parser refuses (bools only True/False, no None in a 1d output_size,
# lp_pool's kernel_size as it unpacks it, ...), each with the argument poolgpu names.
X1, X2 = torch.zeros(1, 2, 6), torch.zeros(1, 2, 6, 6)
Y1, I1 = F.max_pool1d(X1, 2, return_indices=True)
REFUSED = [
    ("max_pool1d", (X1, 2), dict(ceil_mode="x"), "ceil_mode"),
    ("max_pool2d", (X2, 2), dict(ceil_mode=1), "ceil_mode"),
    ("max_pool2d", (X2, 2), dict(ceil_mode=np.bool_(True)), "ceil_mode"),
    ("avg_pool1d", (X1, 2), dict(count_include_pad=(1,)), "count_include_pad"),
    ("avg_pool2d", (X2, 2), dict(ceil_mode=1.5), "ceil_mode"),
    ("max_pool1d", (X1, (2, 2)), {}, "kernel_size"),
    ("max_pool2d", (X2, 2.0), {}, "kernel_size"),
    ("max_pool2d", (X2, True), {}, "kernel_size"),
    ("max_pool2d", (X2, (True, 2)), {}, "kernel_size"),
    ("max_pool2d", (X2, (2, 0)), {}, "kernel_size"),
    ("max_pool2d", (X2, range(2, 4)), {}, "kernel_size"),
    ("max_pool2d", (X2, 2), dict(padding=()), "padding"),
    ("avg_pool2d", (X2, 2), dict(divisor_override=2.0), "divisor_override"),
    ("lp_pool1d", (X1, 2, (2,)), {}, "kernel_size"),
    ("lp_pool2d", (X2, 2, (2,)), {}, "kernel_size"),
    ("lp_pool2d", (X2, 2, 2), dict(ceil_mode=np.array([2.0, 2.0])), "ceil_mode"),
    ("lp_pool1d", (X1, "2", 2), {}, "norm_type"),
    ("adaptive_avg_pool1d", (X1, (None,)), {}, "output_size"),
    ("adaptive_max_pool1d", (X1, 3.0), {}, "output_size"),
    ("adaptive_avg_pool2d", (X2, np.int64(3)), {}, "output_size"),
    ("adaptive_avg_pool2d", (X2, (True, 3)), {}, "output_size"),
    ("max_unpool1d", (Y1, I1, 2), dict(output_size=6), "output_size"),
    ("max_unpool2d", F.max_pool2d(X2, 2, return_indices=True) + ((2,),), {}, "kernel_size"),
    ("max_unpool1d", (Y1, I1, 2), dict(output_size=(6.0,)), "output_size"),
    ("max_unpool1d", (Y1, I1, 2), dict(output_size=(None,)), "output_size"),
    ("max_pool1d", ([[1.0, 2.0]], 2), {}, "input"),
    ("max_unpool1d", (Y1, I1.tolist(), 2), {}, "indices"),
]


@pytest.mark.parametrize("name, args, kwargs, field", REFUSED, ids=lambda v: v if isinstance(v, str) else "")
def test_argument_forms_pytorch_refuses_are_refused(name, args, kwargs, field):
    with pytest.raises((TypeError, ValueError, RuntimeError, AttributeError)):
        getattr(F, name)(*args, **kwargs)
    with pytest.raises(pg.ValidationError) as e:
        getattr(pgt, name)(*args, **kwargs)
    assert e.value.field == field, str(e.value)


def test_window_arguments_checked_once_are_refused_every_time():
    # (plain int window arguments are checked once and kept; a refusal is not kept)
    for _ in range(2):
        with pytest.raises(pg.ValidationError, match="stride"):
            pgt.max_pool2d(X2, 2, stride=(1, -1))


def test_argument_forms_pytorch_takes_give_its_results(device):
    x = distinct((1, 2, 6, 6))
    calls = [("max_pool2d", (x, np.int64(3)), dict(stride=[2], padding=(1,), ceil_mode=True)),
             ("max_pool2d", (x, torch.tensor(2)), dict(stride=(), return_indices=True)),
             ("avg_pool2d", (x, [3, 2]), dict(stride=np.int32(2), divisor_override=np.int64(5))),
             ("lp_pool2d", (x.abs(), np.float32(2), (2, 3)), dict(stride=[])),
             ("lp_pool1d", (x[0].abs(), 4, np.int64(3)), {}),
             ("adaptive_max_pool2d", (x, [None, 4]), dict(return_indices=True)),
             ("adaptive_avg_pool1d", (x[0], torch.Size([4])), {}),
             ("max_unpool2d", F.max_pool2d(x, 2, return_indices=True) + (2,),
              dict(output_size=torch.Size([1, 2, 7, 7])))]
    for name, args, kwargs in calls:
        want, got = getattr(F, name)(*args, **kwargs), getattr(pgt, name)(*args, **kwargs, device=device)
        for w, g in zip(want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,)):
            torch.testing.assert_close(g, w, msg=name)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_pytorch_raises_where_poolgpu_raises(dims):
    """Over a grid of window arguments, poolgpu.torch refuses exactly what PyTorch refuses,
    and otherwise gives its shapes (on an empty batch: no GPU work; values are compared in
    the tests above)."""
    x = torch.zeros((0, 2) + (5, 4, 3)[:dims])
    for k, s, p, d, ceil in itertools.product((1, 2, 3, 6), (1, 2, 3), (0, 1, 2), (1, 2), (False, True)):
        for name, kwargs in ((f"max_pool{dims}d", dict(dilation=d)), (f"avg_pool{dims}d", {})):
            if name.startswith("avg") and d != 1:
                continue
            try:
                want = getattr(F, name)(x, k, s, p, ceil_mode=ceil, **kwargs)
            except RuntimeError:
                with pytest.raises(pg.ValidationError):
                    getattr(pgt, name)(x, k, s, p, ceil_mode=ceil, **kwargs)
                continue
            got = getattr(pgt, name)(x, k, s, p, ceil_mode=ceil, **kwargs)
            assert got.shape == want.shape, (name, k, s, p, d, ceil)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no second torch device (CUDA) here")
def test_a_tensor_on_another_torch_device_gets_its_results_there(device):
    x = distinct((1, 2, 6, 6)).cuda()
    y, i = pgt.max_pool2d(x, 2, return_indices=True, device=device)
    assert y.device == x.device and i.device == x.device
    assert torch.equal(y.cpu(), F.max_pool2d(x.cpu(), 2))


def test_import_poolgpu_does_not_import_torch():
    code = "import sys, poolgpu, poolgpu.onnx; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ})


# -- gradients ---------------------------------------------------------------------------------

GRAD_CASES = [
    ("max_pool1d", (3, 1, 1), {}),
    ("max_pool2d", (3, 2, 1), dict(ceil_mode=True)),
    ("max_pool2d", ((3, 2), (1, 2), (1, 1)), dict(dilation=(2, 1))),
    ("max_pool3d", (2, 1), {}),
    ("avg_pool1d", (3, 2, 1), dict(ceil_mode=True, count_include_pad=False)),
    ("avg_pool2d", (3, 1, 1), {}),
    ("avg_pool2d", (3, 2, 1), dict(ceil_mode=True)),
    ("avg_pool2d", ((3, 2), 2), dict(divisor_override=5)),
    ("avg_pool3d", (2, 1, 1), dict(count_include_pad=False)),
    ("adaptive_max_pool1d", (4,), {}),
    ("adaptive_max_pool2d", ((4, 3),), {}),
    ("adaptive_avg_pool2d", ((4, 3),), {}),
    ("adaptive_avg_pool3d", ((2, 3, 4),), {}),
]


@pytest.mark.parametrize("name, args, kwargs", GRAD_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(GRAD_CASES)])
def test_gradients_match_pytorch_and_repeat_bit_for_bit(device, name, args, kwargs):
    dims = int(name[-2])
    x = distinct((2, 3) + (9, 7, 5)[:dims], seed=dims)

    def grad(module):
        xg = x.clone().requires_grad_()
        kw = dict(kwargs, device=device) if module is pgt else kwargs
        y = getattr(module, name)(xg, *args, **kw)
        dy = torch.randn(y.shape, generator=torch.Generator().manual_seed(1))
        y.backward(dy)
        return xg.grad

    got, again, want = grad(pgt), grad(pgt), grad(F)
    assert torch.equal(got, again)  # deterministic
    _close(got, want)  # sums of dy where windows overlap: equal within float32 rounding


def test_max_unpool_gradient_and_round_trip(device):
    x = distinct((2, 3, 7, 9))
    y, i = pgt.max_pool2d(x, 2, return_indices=True, device=device)
    yg = y.clone().requires_grad_()
    out = pgt.max_unpool2d(yg, i, 2, output_size=x.shape[2:], device=device)
    kept = out != 0
    assert torch.equal(out[kept], x[kept])  # every maximum back where it came from
    assert int(kept.sum()) == y.numel()
    dz = torch.randn(out.shape, generator=torch.Generator().manual_seed(3))
    out.backward(dz)
    ty = y.clone().requires_grad_()
    F.max_unpool2d(ty, i, 2, output_size=x.shape[2:]).backward(dz)
    assert torch.equal(yg.grad, ty.grad)


def test_max_unpool_gradient_with_repeated_indices_goes_to_the_element_that_landed(device):
    """Overlapping windows repeat indices: the last value lands (PyTorch's CPU too); its
    gradient is dz there, and the others, which did not land, get 0 (PyTorch gives every
    copy dz)."""
    x = distinct((1, 1, 6, 6))
    y, i = F.max_pool2d(x, 3, 1, return_indices=True)
    yg = y.clone().requires_grad_()
    out = pgt.max_unpool2d(yg, i, 3, 1, device=device)
    dz = torch.randn(out.shape, generator=torch.Generator().manual_seed(4))
    out.backward(dz)
    flat = i.flatten()
    last = torch.zeros_like(flat, dtype=torch.bool)
    seen = set()
    for j in range(len(flat) - 1, -1, -1):
        last[j] = int(flat[j]) not in seen
        seen.add(int(flat[j]))
    want = torch.where(last, dz.flatten()[flat], torch.zeros(()))
    assert torch.equal(yg.grad.flatten(), want)



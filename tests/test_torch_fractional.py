"""poolgpu.torch's fractional max pooling, the gradients of Lp and ROI pooling, and
bfloat16, against PyTorch itself (and torchvision's arithmetic), on every adapter.

- ``fractional_max_pool2d/3d`` under the same seed as ``torch.nn.functional``'s (the samples
  drawn as PyTorch draws them), in float32, float16 and bfloat16, from torch tensors, NumPy
  arrays and pg.Tensors: values and indices exactly; gradients bit for bit; samples outside
  [0, 1) (PyTorch's own OpInfo sample among them) as PyTorch takes them, or refused where
  PyTorch's kernel stops.
- ``lp_pool*`` gradients against PyTorch's autograd (p = 1, 2, 3 and inf on positive inputs,
  ``ceil_mode`` included); ``roi_pool``'s against torchvision's CPU arithmetic
  (tests/reference.py; torchvision need not be installed) with distinct values.
- every family on torch.bfloat16 against PyTorch's CPU kernels.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import poolgpu as pg  # noqa: E402
import poolgpu.torch as pgt  # noqa: E402
import reference  # noqa: E402
from test_torch import _close, _internal, distinct  # noqa: E402

FLOATS = (torch.float32, torch.float16, torch.bfloat16)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_fractional_under_the_same_seed_as_pytorch(device, dtype):
    for dims, shape, kernel, size in ((2, (2, 3, 13, 11), 3, dict(output_size=(5, 4))),
                                      (2, (3, 20, 17), (2, 3), dict(output_ratio=(0.5, 0.7))),
                                      (3, (2, 2, 7, 8, 9), 2, dict(output_ratio=0.5)),
                                      (3, (2, 6, 5, 7), (2, 1, 3), dict(output_size=(3, 4, 4)))):
        x = distinct(shape, seed=dims, dtype=dtype)
        ours, theirs = getattr(pgt, f"fractional_max_pool{dims}d"), getattr(F, f"fractional_max_pool{dims}d")
        torch.manual_seed(11)
        want = theirs(x, kernel, return_indices=True, **size)
        torch.manual_seed(11)
        got = ours(x, kernel, return_indices=True, **size, device=device)
        assert got[0].dtype == dtype and torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]), shape
        # NumPy arrays and pg.Tensors draw the same samples too
        if dtype is torch.float32:
            torch.manual_seed(11)
            yn, i_n = ours(x.numpy(), kernel, return_indices=True, **size, device=device)
            torch.manual_seed(11)
            yt = ours(device.upload(x.numpy()), kernel, **size)
            assert np.array_equal(yn, want[0].numpy()) and np.array_equal(i_n, want[1].numpy())
            assert isinstance(yt, pg.Tensor) and np.array_equal(yt.numpy(), want[0].numpy())


def test_fractional_gradients_bit_for_bit(device):
    # PyTorch's CPU backward adds each window's gradient at its argmax in (h, w) order, in
    # float32: the gather's order
    for dims, shape, kernel, out in ((2, (2, 3, 12, 11), 3, (9, 8)), (3, (1, 2, 7, 8, 9), 2, (5, 6, 7))):
        x = distinct(shape, seed=3)
        samples = torch.rand(shape[0], shape[1], dims, generator=torch.Generator().manual_seed(dims))
        xg, tg = x.clone().requires_grad_(), x.clone().requires_grad_()
        got = getattr(pgt, f"fractional_max_pool{dims}d")(xg, kernel, out, _random_samples=samples, device=device)
        want = getattr(F, f"fractional_max_pool{dims}d")(tg, kernel, out, _random_samples=samples)
        dy = torch.randn(want.shape, generator=torch.Generator().manual_seed(5))
        got.backward(dy)
        want.backward(dy)
        assert torch.equal(xg.grad, tg.grad)


def _outside_samples_of_pytorchs_opinfo():
    """PyTorch's own OpInfo samples of fractional pooling whose _random_samples leave [0, 1)."""
    op_db, _ = _internal()
    found = []
    for op in op_db:
        if op.name.startswith("nn.functional.fractional_max_pool"):
            for sample in op.sample_inputs("cpu", torch.float32):
                r = sample.kwargs.get("_random_samples")
                if r is not None and not bool(((r >= 0) & (r < 1)).all()):
                    found.append((int(op.name[-2]), sample))
    return found


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_samples_outside_0_1_as_pytorch(device, dtype):
    # PyTorch applies its formula to any sample (float32 alpha, C's int): windows, indices and
    # gradients as its own; where a window would leave the input it stops with an internal
    # assertion, and poolgpu refuses the samples
    opinfo = _outside_samples_of_pytorchs_opinfo()
    assert opinfo   # (torch 2.13: fractional_max_pool2d, kernel 1, samples (4.96, -0.713))
    calls = [(dims, s.input.to(dtype), s.args, {**s.kwargs, "_random_samples": s.kwargs["_random_samples"].to(dtype)})
             for dims, s in opinfo]
    x = distinct((2, 3, 16, 16), seed=2, dtype=dtype)
    for u in ([-5.0, 3.0], [100.0, -100.0], [float("nan"), 0.5], [float("inf"), -float("inf")], [1e9, 0.5],
              [35087244.0, 0.5], [0.5, -2.3e7]):
        for kernel, out in ((1, 8), (2, 5), (3, (7, 4))):
            calls.append((2, x, (kernel,), dict(output_size=out, _random_samples=torch.tensor([[u] * 3] * 2,
                                                                                                dtype=dtype))))
    calls.append((3, distinct((1, 2, 9, 8, 7), seed=3, dtype=dtype), (2,),
                  dict(output_size=(4, 3, 5), _random_samples=torch.tensor([[[2.5, -1.25, 7.0]] * 2], dtype=dtype))))
    refused = 0
    for dims, x, args, kwargs in calls:
        ours, theirs = getattr(pgt, f"fractional_max_pool{dims}d"), getattr(F, f"fractional_max_pool{dims}d")
        kwargs = dict(kwargs, return_indices=True)
        xg, tg = x.clone().requires_grad_(), x.clone().requires_grad_()
        try:
            want = theirs(tg, *args, **kwargs)
        except RuntimeError as exc:
            assert "INTERNAL ASSERT" in str(exc)
            with pytest.raises(pg.ValidationError, match="outside the input") as e:
                ours(xg, *args, **kwargs, device=device)
            assert e.value.field == "_random_samples"
            refused += 1
            continue
        got = ours(xg, *args, **kwargs, device=device)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]), (dims, args, kwargs)
        dy = torch.randn(want[0].shape, generator=torch.Generator().manual_seed(4)).to(dtype)
        got[0].backward(dy)
        want[0].backward(dy)
        assert torch.equal(xg.grad, tg.grad), (dims, args, kwargs)
    assert refused or dtype is not torch.float32   # (35087244 along W: window 2 starts at 16 of 16 in float32)


def test_fractional_arguments_as_pytorch_checks():
    x = torch.zeros(1, 2, 6, 6)
    cases = [
        (lambda: pgt.fractional_max_pool2d(x, 2), "output_size"),
        (lambda: pgt.fractional_max_pool2d(x, 4, output_size=4), "kernel_size"),
        (lambda: pgt.fractional_max_pool2d(x, (2, 2, 2), output_size=3), "kernel_size"),
        (lambda: pgt.fractional_max_pool2d(x, 2, output_ratio=-0.5), "output_ratio"),
        (lambda: pgt.fractional_max_pool2d(x, 2, 3, _random_samples=torch.rand(1, 2, 2, dtype=torch.float64)),
         "_random_samples"),
        (lambda: pgt.fractional_max_pool2d(x, 2, 3, _random_samples=torch.rand(1, 3, 2)), "_random_samples"),
        (lambda: pgt.fractional_max_pool3d(torch.zeros(1, 2, 6, 6, 6), 2, 3, _random_samples=torch.rand(1, 2, 2)),
         "_random_samples"),
        (lambda: pgt.fractional_max_pool2d(x.long(), 2, 3), "input"),
        (lambda: pgt.fractional_max_pool3d(torch.zeros(1, 2, 6, 6, 6), 2, 5), "kernel_size"),   # (3d: PyTorch's <)
    ]
    for call, field in cases:
        with pytest.raises(pg.ValidationError) as e:
            call()
        assert e.value.field == field, (field, str(e.value))
    # more samples than images: the first ones are taken, as PyTorch takes them; samples as
    # an array for a torch input
    samples = torch.rand(3, 2, 2)
    want = F.fractional_max_pool2d(distinct((1, 2, 6, 6)), 2, 3, _random_samples=samples)
    assert torch.equal(pgt.fractional_max_pool2d(distinct((1, 2, 6, 6)), 2, 3, _random_samples=samples), want)
    assert torch.equal(pgt.fractional_max_pool2d(distinct((1, 2, 6, 6)), 2, 3, _random_samples=samples.numpy()), want)
    half = samples.bfloat16()
    x16 = distinct((1, 2, 6, 6), dtype=torch.bfloat16)
    device = pg.default_device()   # (a pg.Tensor of bfloat16 samples, read by its bits)
    upload = device.upload(half.view(torch.int16).numpy())
    bits = device.wrap(upload.buffer, pg.TensorDesc("bfloat16", (3, 2, 2)), upload.offset)
    assert torch.equal(pgt.fractional_max_pool2d(x16, 2, 3, _random_samples=bits),
                       F.fractional_max_pool2d(x16, 2, 3, _random_samples=half))


@pytest.mark.parametrize("p", [1, 2, 3, float("inf")])
def test_lp_gradients_match_pytorchs(device, p):
    for dims, shape, kernel, stride, ceil_mode in ((1, (2, 3, 10), 3, 2, True), (2, (2, 3, 9, 11), (2, 3), 2, False),
                                                   (2, (1, 2, 7, 7), 3, 2, True), (3, (1, 2, 5, 6, 7), 2, None, False)):
        x = distinct(shape, seed=dims).abs() + 0.01   # positive: PyTorch's x ** p is |x| ** p
        xg, tg = x.clone().requires_grad_(), x.clone().requires_grad_()
        got = getattr(pgt, f"lp_pool{dims}d")(xg, p, kernel, stride, ceil_mode, device=device)
        want = getattr(F, f"lp_pool{dims}d")(tg, p, kernel, stride, ceil_mode)
        _close(got, want)
        dy = torch.randn(want.shape, generator=torch.Generator().manual_seed(dims))
        got.backward(dy)
        want.backward(dy)
        torch.testing.assert_close(xg.grad, tg.grad, rtol=3e-5, atol=1e-6)


def test_lp_gradient_of_a_window_of_zeros_is_zero(device):
    x = torch.zeros(1, 1, 4, 4, requires_grad=True)
    pgt.lp_pool2d(x, 2, 2, device=device).sum().backward()
    assert torch.equal(x.grad, torch.zeros_like(x))   # (PyTorch's: NaN)


def test_roi_gradients_as_torchvisions_arithmetic(device):
    x = distinct((2, 3, 12, 14), seed=9)   # distinct values: one argmax per bin
    boxes = torch.tensor([[0, 1, 1, 9, 7], [1, 0.4, 2.6, 13, 11], [0, 5, 5, 5, 5], [1, -3, -2, 20, 30],
                          [0, 2.5, 3, 7.5, 6], [1, 11, 0, 2, 4]], dtype=torch.float32)
    for output_size, scale in (((3, 2), 1.0), ((7, 7), 0.5), ((2, 5), 1.3)):
        xg = x.clone().requires_grad_()
        y = pgt.roi_pool(xg, boxes, output_size, scale, device=device)
        np.testing.assert_array_equal(y.detach().numpy(), reference.torchvision_roi_pool(x.numpy(), boxes.numpy(),
                                                                                          output_size, scale))
        dy = torch.randn(y.shape, generator=torch.Generator().manual_seed(1))
        y.backward(dy)
        want = reference.torchvision_roi_pool_grad(x.numpy(), boxes.numpy(), dy.numpy(), output_size, scale)
        np.testing.assert_array_equal(xg.grad.numpy(), want)   # float32 sums in torchvision's order
    # boxes as a list per image, and half types (sums rounded once)
    for dtype in (torch.float16, torch.bfloat16):
        xh = x.to(dtype).requires_grad_()
        y = pgt.roi_pool(xh, [boxes[boxes[:, 0] == 0, 1:], boxes[boxes[:, 0] == 1, 1:]], 3, device=device)
        y.backward(torch.ones_like(y))
        order = torch.cat([boxes[boxes[:, 0] == 0], boxes[boxes[:, 0] == 1]])
        want = reference.torchvision_roi_pool_grad(xh.detach().float().numpy(), order.numpy(),
                                                   np.ones(y.shape, np.float32), (3, 3))
        np.testing.assert_array_equal(xh.grad.float().numpy(), want.astype(np.float32))


@pytest.mark.parametrize("function, args", [
    ("max_pool2d", (3, 2, 1)), ("avg_pool2d", (3, 2, 1)), ("avg_pool1d", (3, 2, 1)), ("adaptive_max_pool2d", ((4, 3),)),
    ("adaptive_avg_pool2d", ((4, 3),)), ("lp_pool2d", (2, 2)), ("max_pool1d", (3, 2))])
def test_bfloat16_as_pytorchs_cpu(device, function, args):
    shape = {"1d": (2, 3, 11), "2d": (2, 3, 9, 8), "3d": (2, 3, 5, 4, 6)}[function[-2:]]
    x = distinct(shape, seed=2, dtype=torch.bfloat16) * 8
    x = x.abs() if function.startswith("lp") else x
    xg, tg = x.clone().requires_grad_(), x.clone().requires_grad_()
    got, want = getattr(pgt, function)(xg, *args, device=device), getattr(F, function)(tg, *args)
    assert got.dtype == torch.bfloat16
    if function.startswith("lp"):   # PyTorch rounds x ** p and the mean to bfloat16 first
        torch.testing.assert_close(got, want, rtol=2**-6, atol=0)
    else:   # maxima, and averages summed in float32 and rounded once: PyTorch's bits
        assert torch.equal(got, want)
    dy = torch.ones_like(want)
    got.backward(dy)
    want.backward(dy)
    torch.testing.assert_close(xg.grad, tg.grad, rtol=2**-6, atol=2**-8)
    # NumPy's bfloat16 (ml_dtypes) comes back as it came in
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bits = x.view(torch.int16).numpy()
    y = getattr(pgt, function)(bits.view(ml_dtypes.bfloat16), *args, device=device)
    assert y.dtype == ml_dtypes.bfloat16 and np.array_equal(y.view(np.int16), got.detach().view(torch.int16).numpy())


def test_bfloat16_unpool_and_roi(device):
    x = distinct((2, 3, 8, 10), seed=4, dtype=torch.bfloat16)
    y, i = pgt.max_pool2d(x, 2, return_indices=True, device=device)
    assert torch.equal(pgt.max_unpool2d(y, i, 2, device=device), F.max_unpool2d(y, i, 2))
    boxes = torch.tensor([[0, 1, 1, 6, 7], [1, 0, 2, 9, 5]], dtype=torch.bfloat16)
    r = pgt.roi_pool(x, boxes, (2, 3), device=device)
    want = reference.torchvision_roi_pool(x.float().numpy(), boxes.float().numpy(), (2, 3))
    assert r.dtype == torch.bfloat16 and np.array_equal(r.float().numpy(), want)

"""poolgpu.torch.ps_roi_pool (and its autograd, and pgt.nn.PSRoIPool with convert and
unconvert) against NumPy transcriptions of torchvision's CPU kernel (tests/reference.py), on
every adapter; tests/torchvision_check.py compares with torchvision itself where it imports."""

import sys
import types

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import poolgpu as pg  # noqa: E402
import poolgpu.torch as pgt  # noqa: E402
from reference import torchvision_ps_roi_pool, torchvision_ps_roi_pool_grad  # noqa: E402

RNG = np.random.default_rng(7)
X = torch.from_numpy(RNG.standard_normal((2, 18, 9, 11)).astype(np.float32))   # 2 x (3 x 3) channels
# inside, partly outside, a point, inverted, wholly outside (empty bins), larger than the map
BOXES = torch.tensor([[0, 1, 1, 7, 6], [1, -2, 0.5, 4, 8], [0, 3, 3, 3.2, 3.3], [1, 9, 7, 2, 1],
                      [0, -9, -9, -5, -4], [1, 5, 2, 30, 20], [0, 0, 0, 10, 8], [1, 12.5, 2, 20, 3]],
                     dtype=torch.float32)


@pytest.mark.parametrize("scale", [1.0, 0.5, 0.3])
def test_ps_roi_pool_and_its_gradient(device, scale):
    x = X.clone().requires_grad_(True)
    y = pgt.ps_roi_pool(x, BOXES, 3, scale, device=device)
    np.testing.assert_array_equal(y.detach().numpy(), torchvision_ps_roi_pool(X.numpy(), BOXES.numpy(), (3, 3), scale))
    dy = torch.from_numpy(RNG.standard_normal(y.shape).astype(np.float32))
    y.backward(dy)
    want = torchvision_ps_roi_pool_grad(X.shape, BOXES.numpy(), dy.numpy(), (3, 3), scale)
    np.testing.assert_array_equal(x.grad.numpy(), want)
    first = x.grad.clone()
    x.grad = None
    pgt.ps_roi_pool(x, BOXES, 3, scale, device=device).backward(dy)
    assert torch.equal(first, x.grad)   # deterministic: the same bits


def test_many_boxes_rectangular_bins(device):
    """1,200 boxes over two images, some outside the map, (2, 3) bins; the gradient's bins
    (clamped to the size) differ from the forward's (clamped to size - 1) at the edges.  So
    many boxes over one element are added in runs, then the runs' sums: the same bits run
    after run, within rounding of torchvision's one sum in box order."""
    x = torch.from_numpy(RNG.standard_normal((2, 12, 13, 10)).astype(np.float32)).requires_grad_(True)
    count = 1200
    corners = RNG.uniform(-6, 18, (count, 2))
    boxes = np.concatenate([RNG.integers(0, 2, (count, 1)), corners, corners + RNG.uniform(-1, 9, (count, 2))],
                           axis=1).astype(np.float32)
    y = pgt.ps_roi_pool(x, torch.from_numpy(boxes), (2, 3), 0.8, device=device)
    np.testing.assert_array_equal(y.detach().numpy(),
                                  torchvision_ps_roi_pool(x.detach().numpy(), boxes, (2, 3), 0.8))
    dy = torch.from_numpy(RNG.integers(-4, 5, y.shape).astype(np.float32))
    y.backward(dy)
    want = torchvision_ps_roi_pool_grad(x.shape, boxes, dy.numpy(), (2, 3), 0.8)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6, atol=1e-6)
    first = x.grad.clone()
    x.grad = None
    pgt.ps_roi_pool(x, torch.from_numpy(boxes), (2, 3), 0.8, device=device).backward(dy)
    assert torch.equal(first, x.grad)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("width", [11, 300])   # bfloat16 holds corners up to 256 exactly: then a float32 copy
def test_half_types_sum_in_float32(device, dtype, width):
    x = torch.from_numpy(RNG.standard_normal((1, 8, 5, width)).astype(np.float32)).to(dtype).requires_grad_(True)
    boxes = torch.tensor([[0, 0, 0, 4, 3], [0, width - 6, 1, width + 3, 9], [0, 2, 2, 2, 2]], dtype=torch.float32)
    y = pgt.ps_roi_pool(x, boxes, 2, device=device)
    assert y.dtype == dtype
    want = torchvision_ps_roi_pool(x.detach().float().numpy(), boxes.numpy(), (2, 2))
    assert torch.equal(y.detach(), torch.from_numpy(want).to(dtype))   # float32 sums, rounded once
    dy = torch.ones_like(y) * 3
    y.backward(dy)
    assert x.grad.dtype == dtype
    want = torchvision_ps_roi_pool_grad(x.shape, boxes.numpy(), dy.float().numpy(), (2, 2))
    assert torch.equal(x.grad, torch.from_numpy(want).to(dtype))


def test_kinds_lists_and_no_boxes(device):
    per_image = [BOXES[BOXES[:, 0] == i, 1:] for i in range(2)]
    rows = torch.cat([torch.cat([torch.full((len(b), 1), float(i)), b], 1) for i, b in enumerate(per_image)])
    got = pgt.ps_roi_pool(X, per_image, 3, device=device)
    assert torch.equal(got, pgt.ps_roi_pool(X, rows, 3, device=device))
    assert np.array_equal(pgt.ps_roi_pool(X.numpy(), rows.numpy(), 3, device=device), got.numpy())
    x = X.clone().requires_grad_(True)
    y = pgt.ps_roi_pool(x, torch.zeros(0, 5), 3, device=device)
    assert y.shape == (0, 2, 3, 3)
    y.sum().backward()
    assert torch.equal(x.grad, torch.zeros_like(X))


def test_bad_arguments_are_named():
    with pytest.raises(pg.ValidationError) as e:
        pgt.ps_roi_pool(X[:, :8], BOXES, 3)
    assert e.value.field == "input"
    for boxes in (torch.zeros(2, 4), torch.tensor([[2, 0, 0, 1, 1.0]]), torch.tensor([[0, 0, 0, float("inf"), 1]])):
        with pytest.raises(pg.ValidationError) as e:
            pgt.ps_roi_pool(X, boxes, 3)
        assert e.value.field == "boxes"


def test_module_convert_and_unconvert(device, monkeypatch):
    module = pgt.nn.PSRoIPool((3, 3), 0.5, device=device)
    assert repr(module) == "PSRoIPool(output_size=(3, 3), spatial_scale=0.5)"
    assert torch.equal(module(X, BOXES), pgt.ps_roi_pool(X, BOXES, 3, 0.5, device=device))

    class PSRoIPool(torch.nn.Module):   # torchvision.ops' (which does not import here), as convert sees it
        def __init__(self, output_size, spatial_scale):
            super().__init__()
            self.output_size, self.spatial_scale = output_size, spatial_scale

    ops = types.ModuleType("torchvision.ops")
    ops.PSRoIPool = PSRoIPool
    monkeypatch.setitem(sys.modules, "torchvision.ops", ops)
    model = torch.nn.Sequential(PSRoIPool(3, 0.5))
    pgt.convert(model, device=device)
    assert type(model[0]) is pgt.nn.PSRoIPool and model[0].device is device
    assert torch.equal(model[0](X, BOXES), pgt.ps_roi_pool(X, BOXES, 3, 0.5, device=device))
    pgt.unconvert(model)
    assert type(model[0]) is PSRoIPool and model[0].output_size == 3

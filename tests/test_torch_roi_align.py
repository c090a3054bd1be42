"""poolgpu.torch.roi_align and ps_roi_align (and their autograd, and the torchvision-style
modules) against NumPy transcriptions of torchvision's CPU kernels
(tests/roi_align_reference.py), on every adapter; tests/test_torchvision.py compares with
torchvision itself where it can be imported."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import poolgpu as pg  # noqa: E402
import poolgpu.torch as pgt  # noqa: E402
from roi_align_reference import roi_align_grad, torchvision_roi_align  # noqa: E402

RNG = np.random.default_rng(4)
X = torch.from_numpy(RNG.standard_normal((2, 8, 9, 11)).astype(np.float32))
BOXES = torch.tensor([[0, 1, 1, 7, 6], [1, -2, 0.5, 4, 8], [0, 3, 3, 3.2, 3.3], [1, 9, 7, 2, 1],
                      [0, -9, -9, -5, -4], [1, 5, 2, 30, 20]], dtype=torch.float32)


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("ratio", [-1, 2])
def test_roi_align_and_its_gradient(device, aligned, ratio):
    x = X.clone().requires_grad_(True)
    boxes = BOXES if not aligned else BOXES[[0, 1, 2, 4, 5]]   # (torchvision fails on inverted aligned boxes)
    y = pgt.roi_align(x, boxes, (3, 2), 0.5, ratio, aligned, device=device)
    want = torchvision_roi_align(X.numpy(), boxes.numpy(), (3, 2), 0.5, ratio, aligned)
    np.testing.assert_array_equal(y.detach().numpy(), want)
    dy = torch.from_numpy(RNG.standard_normal(y.shape).astype(np.float32))
    y.backward(dy)
    fixed = ratio > 0
    want_dx = roi_align_grad(X.numpy(), boxes[:, 1:].numpy(), boxes[:, 0].numpy().astype(int), dy.numpy(), (3, 2),
                             scale_x=0.5, scale_y=0.5, input_offset=0.5 if aligned else 0.0,
                             min_samples=ratio if fixed else 0, max_samples=ratio if fixed else 2**32 - 1,
                             min_region=None if aligned else 1.0)
    np.testing.assert_allclose(x.grad.numpy(), want_dx, rtol=1e-5, atol=1e-6)
    first = x.grad.clone()
    x.grad = None
    pgt.roi_align(x, boxes, (3, 2), 0.5, ratio, aligned, device=device).backward(dy)
    assert torch.equal(first, x.grad)   # deterministic


def test_boxes_as_a_list_per_image_and_kinds(device):
    per_image = [BOXES[BOXES[:, 0] == i, 1:] for i in range(2)]
    rows = torch.cat([torch.cat([torch.full((len(b), 1), float(i)), b], 1) for i, b in enumerate(per_image)])
    got = pgt.roi_align(X, per_image, 2, device=device)
    assert torch.equal(got, pgt.roi_align(X, rows, 2, device=device))
    assert np.array_equal(pgt.roi_align(X.numpy(), rows.numpy(), 2, device=device), got.numpy())
    half = pgt.roi_align(X.half(), rows.half(), 2, device=device)
    assert half.dtype == torch.float16
    np.testing.assert_allclose(half.float().numpy(), got.numpy(), atol=2e-2)


def test_ps_roi_align(device):
    x = X.clone().requires_grad_(True)   # 8 channels: 2 x (2 x 2) bins
    boxes = BOXES[[0, 1, 2, 5]]
    y = pgt.ps_roi_align(x, boxes, 2, 1.0, 2, device=device)
    full = torchvision_roi_align(X.numpy(), boxes.numpy(), (2, 2), 1.0, 2, True)
    for c in range(2):
        for i in range(2):
            for j in range(2):
                np.testing.assert_array_equal(y.detach().numpy()[:, c, i, j], full[:, (c * 2 + i) * 2 + j, i, j])
    y.sum().backward()
    assert x.grad.abs().sum() > 0
    with pytest.raises(pg.ValidationError) as e:
        pgt.ps_roi_align(X[:, :6], boxes, 2)
    assert e.value.field == "input"


def test_modules_and_convert(device):
    module = pgt.nn.RoIAlign((2, 2), 0.5, 2, aligned=True, device=device)
    assert repr(module) == "RoIAlign(output_size=(2, 2), spatial_scale=0.5, sampling_ratio=2, aligned=True)"
    assert torch.equal(module(X, BOXES[:3]), pgt.roi_align(X, BOXES[:3], 2, 0.5, 2, True, device=device))
    pool = pgt.nn.RoIPool(2, 1.0, device=device)
    assert torch.equal(pool(X, BOXES), pgt.roi_pool(X, BOXES, 2, device=device))
    multi = pgt.nn.MultiScaleRoIAlign(["a", "b"], 3, 2, device=device)
    features = {"a": torch.randn(1, 4, 32, 32), "b": torch.randn(1, 4, 16, 16)}
    boxes = [torch.tensor([[0, 0, 20, 20], [0, 0, 127, 127.0]])]
    out = multi(features, boxes, [(128, 128)])
    # FPN levels: the small box from "a" (scale 1/4), the large one from "b" (1/8)
    assert torch.equal(out[0], pgt.roi_align(features["a"], torch.tensor([[0, 0, 0, 20, 20.0]]), 3, 0.25, 2,
                                             device=device)[0])
    assert torch.equal(out[1], pgt.roi_align(features["b"], torch.tensor([[0, 0, 0, 127, 127.0]]), 3, 0.125, 2,
                                             device=device)[0])


def test_bad_boxes_are_named():
    for boxes in (torch.zeros(2, 4), torch.tensor([[2, 0, 0, 1, 1.0]])):
        with pytest.raises(pg.ValidationError) as e:
            pgt.roi_align(torch.zeros(1, 1, 4, 4), boxes, 2)
        assert e.value.field == "boxes"

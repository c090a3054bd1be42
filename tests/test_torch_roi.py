"""poolgpu.torch.roi_pool against a NumPy transcription of torchvision's CPU kernel
(tests/reference.py: torchvision_roi_pool), on every adapter."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import poolgpu as pg  # noqa: E402
import poolgpu.torch as pgt  # noqa: E402
from reference import torchvision_roi_pool  # noqa: E402


def image(shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


BOXES = [
    [0, 0, 0, 6, 4],            # plain
    [1, 1.5, 2.5, 5.5, 7.5],    # halves: rounded away from zero
    [0, -0.5, -1.5, 3.49, 2.5],  # negative halves
    [1, 6, 7, 2, 1],            # reversed corners: a 1 x 1 region
    [0, -20, -20, -5, -5],      # wholly outside the image: empty bins give 0
    [1, 5, 3, 40, 30],          # partly outside
    [0, 0, 0, 2, 2],            # smaller than the bins: some bins repeat, some are empty
]


@pytest.mark.parametrize("output_size, scale", [((3, 2), 1.0), (2, 0.5), ((7, 5), 0.25), (1, 2.0)])
def test_matches_torchvision(device, output_size, scale):
    x = image((2, 3, 9, 11))
    boxes = torch.tensor(BOXES, dtype=torch.float32)
    boxes[:, 1:] /= scale  # in input coordinates: the halves stay halves after scaling
    got = pgt.roi_pool(x, boxes, output_size, scale, device=device)
    pooled = (output_size, output_size) if isinstance(output_size, int) else output_size
    want = torchvision_roi_pool(x.numpy(), boxes.numpy(), pooled, scale)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    np.testing.assert_array_equal(got.numpy(), want)


def test_float32_bins_where_exact_arithmetic_differs(device):
    """A region of 3 in 21 bins: torchvision's float32 product gives bin 20 the end 4 (exact
    arithmetic: 3); poolgpu.torch gives torchvision's bins, pg.roi_pool DirectML's."""
    x = image((1, 2, 6, 6), seed=1)
    boxes = torch.tensor([[0, 0, 0, 2, 2]], dtype=torch.float32)
    got = pgt.roi_pool(x, boxes, (1, 21), device=device).numpy()
    want = torchvision_roi_pool(x.numpy(), boxes.numpy(), (1, 21))
    np.testing.assert_array_equal(got, want)
    directml = pg.roi_pool(x.numpy(), boxes.numpy(), (1, 21), device=device)
    assert not np.array_equal(directml, want)  # the case tells the two formulas apart


def test_a_list_of_boxes_per_image(device):
    x = image((2, 3, 9, 11), seed=2)
    per_image = [torch.tensor([[0, 0, 4, 4], [2, 3, 8, 6]], dtype=torch.float32),
                 torch.tensor([[1, 1, 10, 8]], dtype=torch.float32)]
    got = pgt.roi_pool(x, per_image, (2, 3), device=device)
    rows = [[0] + b for b in per_image[0].tolist()] + [[1] + b for b in per_image[1].tolist()]
    np.testing.assert_array_equal(got.numpy(), torchvision_roi_pool(x.numpy(), np.array(rows, np.float32), (2, 3)))


def test_kinds_and_float16(device):
    x = image((1, 2, 8, 8), seed=3)
    boxes = np.array([[0, 1, 1, 6, 5]], np.float32)
    want = torchvision_roi_pool(x.numpy(), boxes, (2, 2))
    np.testing.assert_array_equal(pgt.roi_pool(x.numpy(), boxes, 2, device=device), want)
    t = pgt.roi_pool(device.upload(x.numpy()), boxes, 2)
    assert isinstance(t, pg.Tensor) and np.array_equal(np.asarray(t), want)
    half = pgt.roi_pool(x.half(), torch.from_numpy(boxes).half(), 2, device=device)
    assert half.dtype == torch.float16
    np.testing.assert_array_equal(half.numpy(), torchvision_roi_pool(x.half().float().numpy(), boxes, (2, 2)).astype(np.float16))


def test_bad_boxes_are_named():
    x = torch.zeros(1, 1, 4, 4)
    for boxes in (torch.zeros(2, 4), [torch.zeros(2, 5)], torch.tensor([[3, 0, 0, 1, 1.0]])):
        with pytest.raises(pg.ValidationError) as e:
            pgt.roi_pool(x, boxes, 2)
        assert e.value.field == "boxes"
    with pytest.raises(pg.ValidationError) as e:
        pgt.roi_pool(x, torch.zeros(1, 5), 0)
    assert e.value.field == "output_size"

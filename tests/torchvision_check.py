"""poolgpu.torch's ROI functions and modules against torchvision itself: run by
tests/test_torchvision.py in a Python with PyPI's torch and torchvision (which do not import
beside PyTorch's CPU build: scripts/torchvision-venv.sh makes one), on the CPU, with poolgpu
from this checkout.  Prints "ok" and a line per check; raises on a difference."""

import sys

import numpy as np
import torch
import torchvision
from torchvision.ops import MultiScaleRoIAlign, ps_roi_align, ps_roi_pool, roi_align, roi_pool

import poolgpu as pg
import poolgpu.torch as pgt

device = pg.Device(backend=sys.argv[1]) if len(sys.argv) > 1 else pg.default_device()
torch.manual_seed(0)


def close(got, want, what, tol=1e-5):
    diff = (got.double() - want.double()).abs().max().item() if want.numel() else 0.0
    assert diff <= tol * max(1.0, want.abs().max().item() if want.numel() else 1.0), f"{what}: {diff}"
    print(f"{what}: max difference {diff:.3g}")


def boxes_of(count, images, size):
    corners = torch.rand(count, 4) * (size + 8) - 4
    batch = torch.randint(0, images, (count, 1)).float()
    return torch.cat([batch, corners], dim=1)


x = torch.randn(2, 8, 13, 17, requires_grad=True)
boxes = boxes_of(40, 2, 17)
boxes[:10, 3:] = boxes[:10, 1:3] + torch.rand(10, 2) * 3   # proper boxes
inverted_too = boxes
proper = boxes.clone()   # torchvision fails on inverted boxes where aligned (a vector of negative size)
proper[:, 3:] = torch.maximum(boxes[:, 1:3], boxes[:, 3:])
for aligned in (False, True):
    for ratio in (-1, 0, 2, 3):
        for scale in (1.0, 0.5):
            boxes = proper if aligned else inverted_too
            want = roi_align(x, boxes, (3, 4), scale, ratio, aligned)
            got = pgt.roi_align(x, boxes, (3, 4), scale, ratio, aligned, device=device)
            close(got, want, f"roi_align aligned={aligned} sampling_ratio={ratio} scale={scale}")
            dy = torch.randn_like(want)
            (gw,) = torch.autograd.grad(want, x, dy)
            (gg,) = torch.autograd.grad(got, x, dy)
            close(gg, gw, f"  its gradient")
boxes = proper
xs = torch.randn(2, 2 * 9, 11, 12, requires_grad=True)
for ratio in (-1, 2):
    want, got = ps_roi_align(xs, boxes, 3, 0.5, ratio), pgt.ps_roi_align(xs, boxes, 3, 0.5, ratio, device=device)
    empty = torch.isnan(want)   # torchvision's 0 / 0 for a bin without samples; poolgpu gives 0
    assert (got[empty] == 0).all()
    close(torch.where(empty, 0, got), torch.where(empty, 0, want), f"ps_roi_align sampling_ratio={ratio} "
                                                                   f"({int(empty.sum())} NaN bins of torchvision's)")
    dy = torch.randn_like(want)
    close(torch.autograd.grad(got, xs, dy)[0], torch.autograd.grad(want, xs, dy)[0], "  its gradient")
want, got = roi_pool(x, boxes, (2, 3), 0.5), pgt.roi_pool(x, boxes, (2, 3), 0.5, device=device)
close(got, want, "roi_pool", 0)
for scale in (1.0, 0.5):
    want, got = ps_roi_pool(xs, inverted_too, 3, scale), pgt.ps_roi_pool(xs, inverted_too, 3, scale, device=device)
    close(got, want, f"ps_roi_pool scale={scale}", 0)
    dy = torch.randn_like(want)
    close(torch.autograd.grad(got, xs, dy)[0], torch.autograd.grad(want, xs, dy)[0], "  its gradient", 0)

# A Mask R-CNN-style box and mask head: MultiScaleRoIAlign over a feature pyramid, random weights.
class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.box_pool = MultiScaleRoIAlign(["0", "1", "2", "3"], 7, 2)
        self.mask_pool = MultiScaleRoIAlign(["0", "1", "2", "3"], 14, 2)
        self.fc = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16 * 49, 32), torch.nn.ReLU(),
                                      torch.nn.Linear(32, 5))
        self.mask = torch.nn.Sequential(torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.ReLU(),
                                        torch.nn.Conv2d(16, 3, 1))

    def forward(self, features, proposals, image_shapes):
        return (self.fc(self.box_pool(features, proposals, image_shapes)),
                self.mask(self.mask_pool(features, proposals, image_shapes)))


image = (256, 320)
features = {str(k): torch.randn(2, 16, image[0] // 2 ** (k + 2), image[1] // 2 ** (k + 2), requires_grad=True)
            for k in range(4)}
proposals = []
for _ in range(2):
    xy = torch.rand(30, 2) * torch.tensor([image[1], image[0]])
    wh = torch.rand(30, 2) * 200 + 4
    proposals.append(torch.cat([xy, xy + wh], dim=1))
head = Head()
want = head(features, proposals, [image, image])
converted = pgt.convert(head, device=device)
assert isinstance(converted.box_pool, pgt.nn.MultiScaleRoIAlign), type(converted.box_pool)
got = converted(features, proposals, [image, image])
for g, w, name in zip(got, want, ("box scores", "mask logits")):
    close(g, w, f"Mask R-CNN-style head: {name}")
    dy = torch.randn_like(w)
    inputs = list(features.values()) + list(head.parameters())
    grads_w = torch.autograd.grad(w, inputs, dy, retain_graph=True, allow_unused=True)
    grads_g = torch.autograd.grad(g, inputs, dy, retain_graph=True, allow_unused=True)
    for k, (a, b) in enumerate(zip(grads_g, grads_w)):
        assert (a is None) == (b is None)
        if a is not None:
            close(a, b, f"  gradient {k}", 1e-4)
print("ok", torch.__version__, torchvision.__version__)

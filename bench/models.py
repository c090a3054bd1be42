"""Converted models: classifiers shaped as torchvision's (random weights, batch 1, float32)
with torch's pooling and with poolgpu's (``pgt.convert``), against the floor of each pooling
layer's bytes (bench/host.py's ``_Floor``) in the same places of the model, and what a
pooling layer costs alone through poolgpu.torch against the floor.

torchvision is not needed (beside PyTorch's CPU build it does not import): the models are
written here with torchvision's layer shapes, which is all the pooling layers see.
``python -m bench.models`` prints the rows; the main bench keeps them under ``host`` where
torch is installed (this module needs it)."""

from __future__ import annotations

import copy
import statistics

import torch
import torch.nn as nn

import poolgpu.torch as pgt

from .host import _alternating, _Floor
from .timing import GpuTimer

ROUNDS = 7
SIZE = 224
TINY_SIZE = 32  # --tiny: the plumbing (every model still pools at every layer)


class _Residual(nn.Module):
    def __init__(self, body, short):
        super().__init__()
        self.body, self.short = body, short

    def forward(self, x):
        return torch.relu(self.body(x) + self.short(x))


class _Concat(nn.Module):
    def __init__(self, *branches):
        super().__init__()
        self.branches = nn.ModuleList(branches)

    def forward(self, x):
        return torch.cat([b(x) for b in self.branches], 1)


class _SqueezeExcitation(nn.Module):  # torchvision's: its pooling is an AdaptiveAvgPool2d(1) module
    def __init__(self, channels, squeezed):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1, self.fc2 = nn.Conv2d(channels, squeezed, 1), nn.Conv2d(squeezed, channels, 1)

    def forward(self, x):
        return x * torch.sigmoid(self.fc2(nn.functional.silu(self.fc1(self.pool(x)))))


def _resnet18():
    def block(cin, cout, stride):
        body = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                             nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
        short = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                 if stride != 1 or cin != cout else nn.Identity())
        return _Residual(body, short)

    stages = [block(64, 64, 1), block(64, 64, 1)]
    for cin, cout in ((64, 128), (128, 256), (256, 512)):
        stages += [block(cin, cout, 2), block(cout, cout, 1)]
    return nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                         nn.MaxPool2d(3, 2, 1), *stages, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000))


def _googlenet():
    def conv(cin, cout, k, stride=1):
        return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), nn.BatchNorm2d(cout), nn.ReLU())

    def inception(cin, c1, c3r, c3, c5r, c5, proj):
        return _Concat(conv(cin, c1, 1), nn.Sequential(conv(cin, c3r, 1), conv(c3r, c3, 3)),
                       nn.Sequential(conv(cin, c5r, 1), conv(c5r, c5, 3)),
                       nn.Sequential(nn.MaxPool2d(3, 1, 1, ceil_mode=True), conv(cin, proj, 1)))

    pool = lambda k=3: nn.MaxPool2d(k, 2, ceil_mode=True)  # noqa: E731
    return nn.Sequential(
        conv(3, 64, 7, 2), pool(), conv(64, 64, 1), conv(64, 192, 3), pool(),
        inception(192, 64, 96, 128, 16, 32, 32), inception(256, 128, 128, 192, 32, 96, 64), pool(),
        inception(480, 192, 96, 208, 16, 48, 64), inception(512, 160, 112, 224, 24, 64, 64),
        inception(512, 128, 128, 256, 24, 64, 64), inception(512, 112, 144, 288, 32, 64, 64),
        inception(528, 256, 160, 320, 32, 128, 128), pool(2),
        inception(832, 256, 160, 320, 32, 128, 128), inception(832, 384, 192, 384, 48, 128, 128),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1024, 1000))


def _efficientnet_b0():
    def conv(cin, cout, k, stride=1, groups=1):
        return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                             nn.BatchNorm2d(cout), nn.SiLU())

    def mbconv(cin, cout, expand, k, stride):
        mid = cin * expand
        layers = [conv(cin, mid, 1)] if expand != 1 else []
        layers += [conv(mid, mid, k, stride, mid), _SqueezeExcitation(mid, max(1, cin // 4)),
                   nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        body = nn.Sequential(*layers)
        return _Residual(body, nn.Identity()) if stride == 1 and cin == cout else body

    blocks, cin = [], 32
    for expand, k, stride, cout, repeats in ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                                             (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)):
        for r in range(repeats):
            blocks.append(mbconv(cin, cout, expand, k, stride if r == 0 else 1))
            cin = cout
    return nn.Sequential(conv(3, 32, 3, 2), *blocks, conv(320, 1280, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(1280, 1000))


MODELS = {"resnet18": _resnet18, "googlenet": _googlenet, "efficientnet_b0": _efficientnet_b0}


def _pooling_layers(model) -> list:
    pooling = (nn.MaxPool2d, nn.AvgPool2d, nn.AdaptiveAvgPool2d, nn.AdaptiveMaxPool2d)
    return [m for m in model.modules() if type(m) in pooling]


def _floor_after(floor, x_np):
    """A forward hook: the floor's round trip of ``x_np``'s bytes, the layer's output kept."""

    def hook(module, args, output):
        floor.round_trip(x_np)

    return hook


def measure(device, quick: bool = False, tiny: bool = False) -> dict:
    """A row per model: torch's forward and the converted one (alternating rounds), the
    pooling layers swapped, and each layer alone through poolgpu.torch against the floor of
    its bytes and against torch's own."""
    torch.manual_seed(0)
    rounds = 1 if tiny else 3 if quick else ROUNDS
    size = TINY_SIZE if tiny else SIZE
    x = torch.randn(1, 3, size, size)
    rows, timer = {}, GpuTimer(device)
    for name, make in MODELS.items():
        model = make().eval()
        layers = _pooling_layers(model)
        inputs = []
        hooks = [m.register_forward_pre_hook(lambda m, args: inputs.append(args[0])) for m in layers]
        with torch.no_grad():
            model(x)
        for hook in hooks:
            hook.remove()
        converted = pgt.convert(copy.deepcopy(model), device=device)
        # The floor inside the model: torch's model with the floor's round trip of each pooling
        # layer's bytes after the layer.  Between convolutions the same host work takes 2-3x
        # longer than in a loop of its own on a CPU adapter (the floor too: caches and threads
        # are cold after torch's work), so a model's pooling is compared with this floor.
        floored = copy.deepcopy(model)
        for layer, layer_x in zip(_pooling_layers(floored), inputs):
            floor = _Floor(device, layer_x.numel() * 4, layer(layer_x).numel() * 4)
            layer.register_forward_hook(_floor_after(floor, layer_x.numpy()))
        with torch.no_grad():
            same = torch.allclose(model(x), converted(x), rtol=1e-4, atol=1e-4)
            timed = _alternating({"torch": lambda: model(x), "poolgpu": lambda: converted(x),
                                  "floor": lambda: floored(x)}, 1, rounds)
            per_layer = []
            for layer, layer_x in zip(layers, inputs):
                ours = pgt.convert(copy.deepcopy(layer), device=device)
                out = layer(layer_x)
                floor = _Floor(device, layer_x.numel() * 4, out.numel() * 4)
                x_np = layer_x.numpy()
                x_device, kernel_us = device.upload(x_np), []  # (the layer's own GPU time: on device tensors)
                times = _alternating({"torch": lambda: layer(layer_x), "poolgpu": lambda: ours(layer_x),
                                      "floor": lambda: floor.round_trip(x_np),
                                      "kernel": lambda: kernel_us.append(timer.seconds(lambda: ours(x_device)) * 1e6)},
                                     3, rounds)
                per_layer.append(dict({k: v["median_us"] for k, v in times.items()}, kernel=statistics.median(kernel_us)))
        torch_ms, ours_ms = timed["torch"]["median_us"] / 1e3, timed["poolgpu"]["median_us"] / 1e3
        floor_per_layer_us = (timed["floor"]["median_us"] - timed["torch"]["median_us"]) / len(layers)
        # What a swapped layer adds: poolgpu's layer in place of torch's (whose own time is
        # taken out of the model's), over the floor's round trip in the same place.
        torch_layers_us = sum(p["torch"] for p in per_layer)
        added_us = (timed["poolgpu"]["median_us"] - timed["torch"]["median_us"] + torch_layers_us) / len(layers)
        kernels_us = sum(p["kernel"] for p in per_layer) / len(layers)
        rows[name] = {
            "what": f"{name}-shaped classifier, random weights, 1x3x{size}x{size} float32, forward under no_grad",
            "pooling_layers": len(layers), "same_outputs": bool(same),
            "torch_ms": torch_ms, "converted_ms": ours_ms, "converted_vs_torch": ours_ms / torch_ms,
            "added_per_layer_us": (ours_ms - torch_ms) * 1e3 / len(layers),
            "floor_ms": timed["floor"]["median_us"] / 1e3, "floor_per_layer_us": floor_per_layer_us,
            # (None where the floor's share drowned in the model's own spread: tiny inputs)
            "in_model_vs_floor": added_us / floor_per_layer_us if floor_per_layer_us > 0 else None,
            "in_model_beyond_kernel_vs_floor": (added_us - kernels_us) / floor_per_layer_us
            if floor_per_layer_us > 0 else None,
            "layer_vs_floor": statistics.median(p["poolgpu"] / p["floor"] for p in per_layer),
            "layer_beyond_kernel_vs_floor": statistics.median((p["poolgpu"] - p["kernel"]) / p["floor"]
                                                              for p in per_layer),
            "layer_vs_torch": statistics.median(p["poolgpu"] / p["torch"] for p in per_layer),
            "layers_us": per_layer,
        }
    return rows


def _times(ratio) -> str:
    return "n/a" if ratio is None else f"{ratio:.2f}x"


def main(argv=None) -> int:
    """``python -m bench.models [--backend B] [--quick]``: the converted-model rows alone."""
    import argparse

    import poolgpu as pg

    parser = argparse.ArgumentParser(prog="python -m bench.models", description=main.__doc__)
    parser.add_argument("--backend", default=None)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    device = pg.Device(backend=args.backend)
    print(f"{device.name} ({device.backend}); medians; a layer alone: poolgpu.torch over the floor and over torch")
    for name, row in measure(device, args.quick).items():
        print(f"{name:16s} {row['pooling_layers']:2d} pooling layers  torch {row['torch_ms']:7.1f} ms  "
              f"converted {row['converted_ms']:7.1f} ms ({row['converted_vs_torch']:.2f}x, "
              f"{row['added_per_layer_us']:+.0f} us a layer)  in the model: {_times(row['in_model_vs_floor'])} the floor "
              f"({_times(row['in_model_beyond_kernel_vs_floor'])} beyond the kernels);"
              f"  a layer alone: {row['layer_vs_floor']:.2f}x the floor "
              f"({row['layer_beyond_kernel_vs_floor']:.2f}x beyond its kernel), "
              f"{row['layer_vs_torch']:.2f}x torch{'' if row['same_outputs'] else '  OUTPUTS DIFFER'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""poolgpu.torch.nn against torch.nn, on every adapter.

- PyTorch's own ModuleInfo samples (``common_modules.module_db``) of every pooling module
  poolgpu has (torch has none for ``MaxUnpool*``: they unpool ``MaxPool``'s results here),
  each constructed and called unchanged with poolgpu's module and torch's: maxima exactly,
  averages and Lp within float32 rounding.
- Constructor signature, attributes, ``repr``, ``device``, copies.
- ``pgt.convert`` on a small ResNet-like ``nn.Sequential``: the same results and gradients.
"""

import copy
import inspect

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import poolgpu as pg  # noqa: E402
import poolgpu.torch as pgt  # noqa: E402
from test_torch import _close, _internal, distinct  # noqa: E402

NAMES = [f"{family}{d}d" for family in ("MaxPool", "AvgPool", "LPPool", "AdaptiveMaxPool", "AdaptiveAvgPool",
                                        "MaxUnpool") for d in (1, 2, 3)] + ["FractionalMaxPool2d", "FractionalMaxPool3d"]
SAMPLED = [n for n in NAMES if not n.startswith("MaxUnpool")]


def _samples(name):
    _, module_db = _internal()
    (info,) = [m for m in module_db if m.module_cls.__name__ == name]
    return info.module_inputs_func(info, device="cpu", dtype=torch.float32, requires_grad=False, training=False)


@pytest.mark.parametrize("name", SAMPLED)
def test_pytorch_module_info_samples(device, name):
    samples = _samples(name)
    assert samples
    for sample in samples:
        args, kwargs = sample.constructor_input.args, sample.constructor_input.kwargs
        forward_args, forward_kwargs = sample.forward_input.args, sample.forward_input.kwargs
        # (in the input's type, as torch's module tests make them: FractionalMaxPool's
        # _random_samples buffer is given as float64)
        want = getattr(nn, name)(*args, **kwargs).to(torch.float32)(*forward_args, **forward_kwargs)
        got = getattr(pgt.nn, name)(*args, **kwargs, device=device).to(torch.float32)(*forward_args, **forward_kwargs)
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape, (name, args, kwargs)
            if name.startswith("LPPool") and args[0] % 2 and not bool((forward_args[0] >= 0).all()):
                # PyTorch's result is promised for non-negative inputs or even integer
                # norm_type; elsewhere (x ** 1.5 of a negative x) PyTorch gives NaN
                keep = ~torch.isnan(w)
                _close(g[keep], w[keep])
            elif name.startswith(("MaxPool", "AdaptiveMaxPool", "FractionalMaxPool")):
                assert torch.equal(g, w), (name, args, kwargs)
            else:  # sums of inputs of either sign: a result near 0 keeps the inputs' rounding
                torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5, equal_nan=True, msg=str((name, args, kwargs)))


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool_modules_unpool_max_pool_modules(device, dims):
    x = distinct((2, 3) + (8, 6, 4)[:dims])
    y, i = getattr(nn, f"MaxPool{dims}d")(2, return_indices=True)(x)
    ours, theirs = getattr(pgt.nn, f"MaxUnpool{dims}d")(2, device=device), getattr(nn, f"MaxUnpool{dims}d")(2)
    assert torch.equal(ours(y, i), theirs(y, i))
    assert torch.equal(ours(y, i, output_size=x.shape), theirs(y, i, output_size=x.shape))


@pytest.mark.parametrize("name", NAMES)
def test_modules_have_torchs_arguments_attributes_and_repr(name, device):
    theirs_class, ours_class = getattr(nn, name), getattr(pgt.nn, name)
    assert issubclass(ours_class, theirs_class)
    signature = inspect.signature(ours_class)
    def parameters(sig):   # (annotations aside: poolgpu annotates what torch leaves bare)
        return [(p.name, p.kind, p.default) for p in sig.parameters.values()]

    assert parameters(signature)[:-1] == parameters(inspect.signature(theirs_class))
    assert signature.parameters["device"].kind is inspect.Parameter.KEYWORD_ONLY
    args = {"LPPool": (2, 3), "FractionalMaxPool": (3, 4)}.get(name[:-2], (3,))
    ours, theirs = ours_class(*args), theirs_class(*args)
    assert repr(ours) == repr(theirs) and vars(theirs).items() <= vars(ours).items()
    assert ours.device is None
    ours.device = device
    assert repr(ours).endswith(f", device={device!r})")
    assert copy.deepcopy(ours).device is device  # a copied model shares the GPU device
    for bad in ("cuda", torch.device("cpu")):
        with pytest.raises(pg.ValidationError, match="pg.Device") as e:
            ours_class(*args, device=bad)
        assert e.value.field == "device"


class _Residual(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(),
                                  nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels))

    def forward(self, x):
        return torch.relu(x + self.body(x))


def resnet_like():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 5, stride=2, padding=2), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.MaxPool2d(3, 2, 1), _Residual(8), nn.AvgPool2d(2, ceil_mode=True), _Residual(8),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))


def test_convert_ports_a_resnet_like_model(device):
    model = resnet_like()
    reference = copy.deepcopy(model)
    assert pgt.convert(model, device=device) is model
    pooling = [m for m in model.modules() if isinstance(m, (nn.MaxPool2d, nn.AvgPool2d, nn.AdaptiveAvgPool2d))]
    assert [type(m) for m in pooling] == [pgt.nn.MaxPool2d, pgt.nn.AvgPool2d, pgt.nn.AdaptiveAvgPool2d]
    assert all(m.device is device for m in pooling) and repr(pooling[0]).startswith(repr(reference[3])[:-1])
    x = torch.rand(2, 3, 32, 32)
    got, want = model(x), reference(x)
    _close(got, want)
    got.square().sum().backward()
    want.square().sum().backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)
    # a torch pooling module itself is replaced by its poolgpu form, FractionalMaxPool's too
    assert type(pgt.convert(nn.MaxPool1d(2))) is pgt.nn.MaxPool1d
    fractional = nn.Sequential(nn.FractionalMaxPool2d(2, output_size=3, return_indices=True))
    x = torch.rand(1, 2, 7, 7)
    torch.manual_seed(1)
    want = fractional(x)
    assert type(pgt.convert(fractional, device=device)[0]) is pgt.nn.FractionalMaxPool2d
    torch.manual_seed(1)
    got = fractional(x)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    with pytest.raises(pg.ValidationError, match="pg.Device"):
        pgt.convert(model, device="cpu")

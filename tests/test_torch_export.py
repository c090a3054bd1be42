"""Converted models beyond eager PyTorch, on every adapter: ``torch.jit.trace`` of every
poolgpu.torch function and module (optional sizes included), ``torch.onnx.export`` (the
TorchScript exporter, and the dynamo one where onnxscript is installed) of converted
ResNet- and Inception-like classifiers run by ONNX Runtime without poolgpu, what
``pgt.convert`` reports, ``pgt.unconvert``, and ``pgt.functional()``."""

import copy
import logging
import warnings

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional
nn = torch.nn

import poolgpu.torch as pgt  # noqa: E402
from test_torch import _close, distinct  # noqa: E402
from test_torch_graph import CALLS, run_calls, _inputs  # noqa: E402
from test_torch_nn import NAMES, resnet_like  # noqa: E402


def _traced(function, *inputs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (torch.jit.trace is deprecated, and warns of its constants)
        return torch.jit.trace(function, inputs, check_trace=False)


def _graph_ops(traced) -> str:
    return str(traced.inlined_graph)


def test_jit_trace_of_every_function_computes_on_new_inputs(device):
    shapes = {name: shape for name, shape, _, _ in CALLS if shape}
    for name, *_ in CALLS:
        pool = name.replace("unpool", "pool")   # (max_unpool* unpools its max_pool*'s results)

        def f(x, name=name, pool=pool):
            return run_calls(pgt, {pool: x, name: x}, device, only=(pool, name))[-1]

        traced = _traced(f, _inputs(pool, shapes[pool]))
        assert f"poolgpu::{name}" in _graph_ops(traced), name
        fresh = distinct(shapes[pool], seed=7).abs()   # (other values: never a constant baked in)
        assert torch.equal(traced(fresh), f(fresh)), name


def test_jit_trace_of_optional_sizes(device):
    # None in an adaptive output_size keeps the input's size: recorded as such, so a traced
    # module follows a new input's size as torch's does
    for module in (pgt.nn.AdaptiveAvgPool2d((None, 2), device=device), pgt.nn.AdaptiveMaxPool2d((3, None),
                                                                                             device=device),
                   pgt.nn.AdaptiveAvgPool3d((None, 2, None), device=device)):
        dims = 3 if "3d" in type(module).__name__ else 2
        traced = _traced(module, distinct((1, 3) + (9, 8, 7)[:dims]))
        for shape in ((1, 3) + (9, 8, 7)[:dims], (2, 3) + (5, 11, 6)[:dims]):
            x = distinct(shape)
            want = getattr(nn, type(module).__name__)(module.output_size)(x)
            got = traced(x)
            assert got.shape == want.shape
            _close(got, want)
    # output_size from a traced tensor's shape (its sizes are tensors while tracing)
    def unpool(x):
        y, i = pgt.max_pool2d(x, 2, return_indices=True, device=device)
        return pgt.max_unpool2d(y, i, 2, output_size=x.shape[2:], device=device) + \
            pgt.nn.MaxUnpool2d(2, device=device)(y, i, output_size=x.size())

    x = distinct((1, 2, 9, 7))
    assert torch.equal(_traced(unpool, x)(x), unpool(x))


@pytest.mark.parametrize("name", NAMES)
def test_jit_trace_of_every_module(device, name):
    args = {"LPPool": (2, 3), "FractionalMaxPool": (2, 3), "AdaptiveMaxPool": (3,), "AdaptiveAvgPool": (3,)}.get(
        name[:-2], (3, 2))
    dims = int(name[-2])
    module = getattr(pgt.nn, name)(*args, device=device)
    x = distinct((2, 3) + (9, 8, 7)[:dims], seed=dims).abs()
    if name.startswith("MaxUnpool"):
        pool = getattr(pgt.nn, f"MaxPool{dims}d")(*args, return_indices=True, device=device)

        def function(t):
            return module(*pool(t), output_size=t.shape)
    elif name.startswith("Fractional"):   # (its samples drawn in the trace: given here)
        samples = torch.rand(2, 3, dims, generator=torch.Generator().manual_seed(1))

        def function(t):
            return getattr(pgt, f"fractional_max_pool{dims}d")(t, *args, _random_samples=samples, device=device)
    else:
        function = module
    traced = _traced(function, x)
    fresh = distinct(x.shape, seed=9).abs()
    assert torch.equal(traced(fresh), function(fresh)), name


class _InceptionA(nn.Module):   # as torchvision's: the pooling branch an F call in _forward
    def __init__(self, channels):
        super().__init__()
        self.branch1x1 = nn.Conv2d(channels, 4, 1)
        self.branch_pool = nn.Conv2d(channels, 4, 1)

    def _forward(self, x):
        return [self.branch1x1(x), self.branch_pool(F.avg_pool2d(x, kernel_size=3, stride=1, padding=1))]

    def forward(self, x):
        return torch.cat(self._forward(x), 1)


class _InceptionB(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.branch3x3 = nn.Conv2d(channels, 4, 3, stride=2)

    def forward(self, x):
        return torch.cat([self.branch3x3(x), F.max_pool2d(x, kernel_size=3, stride=2)], 1)


class InceptionLike(nn.Module):
    """Inception v3's pooling layout: MaxPool2d and AdaptiveAvgPool2d modules, and
    functional poolings in its blocks' methods (2 here)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.Conv2d_1a_3x3 = nn.Conv2d(3, 8, 3, stride=2)
        self.maxpool1 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Mixed_5b = _InceptionA(8)
        self.Mixed_6a = _InceptionB(8)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(12, 5)

    def forward(self, x):
        x = self.Mixed_6a(self.Mixed_5b(self.maxpool1(self.Conv2d_1a_3x3(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class DenseNetLike(nn.Module):
    """DenseNet's: a MaxPool2d in features, its final pooling F.adaptive_avg_pool2d."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.MaxPool2d(3, 2, 1), nn.AvgPool2d(2, 2))
        self.classifier = nn.Linear(8, 5)

    def forward(self, x):
        out = F.relu(self.features(x))
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(out, (1, 1)), 1))


def _onnx_runs(model, x, path, dynamo):
    """``model`` exported to ``path`` and run by ONNX Runtime: (its pooling node types, the
    result)."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(path), dynamo=dynamo, **({"verbose": False} if dynamo else {}))
    graph = onnx.load(str(path)).graph
    assert all(node.domain in ("", "ai.onnx") for node in graph.node)   # nothing of poolgpu's
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (result,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    return [n.op_type for n in graph.node if "Pool" in n.op_type], torch.from_numpy(result)


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
def test_onnx_export_of_converted_models_runs_in_onnx_runtime(device, tmp_path, dynamo):
    if dynamo:
        pytest.importorskip("onnxscript")   # (the dynamo exporter's translation)
    x = torch.rand(2, 3, 32, 32)
    for make, pools in ((resnet_like, ["MaxPool", "AveragePool", "GlobalAveragePool"]),
                        (InceptionLike, ["MaxPool", "AveragePool", "MaxPool", "GlobalAveragePool"])):
        model = make().eval()
        pgt.convert(model, device=device)
        for context in (pgt.functional(device), torch.no_grad()):   # (Inception's F calls on poolgpu too)
            with context:
                found, result = _onnx_runs(model, x, tmp_path / f"{make.__name__}.onnx", dynamo)
                want = model(x)
            if not dynamo:   # (the dynamo exporter writes a global average as a ReduceMean)
                assert found == pools, make.__name__
            torch.testing.assert_close(result, want, rtol=1e-5, atol=1e-6)


def test_convert_reports_what_it_swapped_and_left(device, caplog):
    caplog.set_level(logging.INFO, logger="poolgpu.torch")
    model = InceptionLike()
    pgt.convert(model, device=device)
    (swapped,) = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert swapped.startswith("convert: 2 pooling modules now run on poolgpu: maxpool1 (MaxPool2d), avgpool "
                              "(AdaptiveAvgPool2d)")
    (left,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert left.startswith("convert: 2 poolings left on torch: Mixed_5b (_InceptionA) calls F.avg_pool2d; Mixed_6a "
                           "(_InceptionB) calls F.max_pool2d")
    caplog.clear()
    pgt.convert(DenseNetLike(), device=device)
    assert "(model) (DenseNetLike) calls F.adaptive_avg_pool2d" in caplog.text

    class OwnPool(nn.MaxPool2d):   # a subclass keeps its own forward: left
        pass

    caplog.clear()
    pgt.convert(nn.Sequential(OwnPool(2), nn.MaxPool2d(2)), device=device)
    assert "1 pooling modules now run on poolgpu: 1 (MaxPool2d)" in caplog.text
    assert "0 (OwnPool) is a subclass of torch.nn.MaxPool2d" in caplog.text


def test_unconvert_puts_torchs_modules_back(device):
    model = resnet_like()
    reference = copy.deepcopy(model)
    pgt.convert(model, device=device)
    hook_calls = []
    model[3].register_forward_hook(lambda *_: hook_calls.append(1))
    assert pgt.unconvert(model) is model
    assert [type(m) for m in model.modules()] == [type(m) for m in reference.modules()]
    assert not hasattr(model[3], "_poolgpu_device") and repr(model) == repr(reference)
    x = torch.rand(2, 3, 16, 16)
    assert torch.equal(model(x), reference(x)) and hook_calls == [1]
    assert type(pgt.unconvert(pgt.nn.AvgPool2d(3, device=device))) is nn.AvgPool2d


def test_functional_sends_f_calls_to_poolgpu(device):
    model = InceptionLike().eval()
    pgt.convert(model, device=device)
    x = torch.rand(2, 3, 32, 32)
    with pgt.functional(device):
        traced = _traced(model, x)
        got = model(x)
    ops = _graph_ops(traced)
    assert ops.count("poolgpu::") == 4 and "aten::max_pool" not in ops and "aten::avg_pool" not in ops
    torch.testing.assert_close(got, pgt.unconvert(model)(x), rtol=1e-5, atol=1e-6)
    # every function of the table, with its arguments as F takes them (indices too)
    y = distinct((2, 3, 9, 8))
    with pgt.functional(device):
        pooled, indices = F.max_pool2d(y, 3, 2, return_indices=True)
        inside = [pooled, indices, F.adaptive_max_pool2d(y, (3, None), True)[1], F.lp_pool2d(y.abs(), 2, 3),
                  F.max_unpool2d(pooled, indices, 3, 2, output_size=y.shape[2:])]
    outside = F.max_pool2d(y, 3, 2, return_indices=True)
    outside = [*outside, F.adaptive_max_pool2d(y, (3, None), True)[1], F.lp_pool2d(y.abs(), 2, 3),
               F.max_unpool2d(outside[0], outside[1], 3, 2, output_size=y.shape[2:])]
    for a, b in zip(inside, outside, strict=True):
        torch.testing.assert_close(a, b)
    with pytest.raises(Exception, match="float64"):   # poolgpu's own refusal: it ran there
        with pgt.functional(device):
            F.avg_pool2d(y.double(), 2)

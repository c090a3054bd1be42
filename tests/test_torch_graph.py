"""poolgpu.torch under PyTorch's graph tools, on every adapter: each function is one custom
operator (``torch.ops.poolgpu.*``) that ``torch.compile(fullgraph=True)`` compiles without
a warning, ``torch.export`` captures as one node, ``torch.jit.trace`` records (computing
on new inputs), meta tensors shape, and ``torch.func.grad`` / ``vmap`` transform; and the
PyTorch conventions around them: channels_last in and out, empty batches in backward, a
negative ``divisor_override``, ``device=`` only a pg.Device."""

import warnings

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import poolgpu as pg  # noqa: E402
import poolgpu.torch as pgt  # noqa: E402
from test_torch import _close, distinct  # noqa: E402

# Every public function once: (name, input shape, args, kwargs); max_unpool* unpools the
# max_pool* call before it, roi_pool takes BOXES.
CALLS = [
    ("max_pool1d", (2, 3, 9), (3, 2, 1), {}),
    ("max_unpool1d", None, (3, 2, 1), dict(output_size=(9,))),
    ("max_pool2d", (2, 3, 9, 8), (3, 2, 1), dict(ceil_mode=True)),
    ("max_unpool2d", None, (3, 2, 1), {}),
    ("max_pool3d", (2, 3, 5, 4, 6), (2,), {}),
    ("max_unpool3d", None, (2,), dict(output_size=(5, 4, 6))),
    ("avg_pool1d", (2, 3, 9), (3, 2, 1), dict(count_include_pad=False)),
    ("avg_pool2d", (2, 3, 9, 8), (3, 2, 1), dict(divisor_override=-3)),
    ("avg_pool3d", (2, 3, 5, 4, 6), (2, 1), dict(ceil_mode=True)),
    ("lp_pool1d", (2, 3, 9), (2, 3), {}),
    ("lp_pool2d", (2, 3, 9, 8), (4.0, (2, 3)), dict(ceil_mode=True)),
    ("lp_pool3d", (2, 3, 5, 4, 6), (2, 2), {}),
    ("adaptive_max_pool1d", (2, 3, 9), (4,), {}),
    ("adaptive_max_pool2d", (2, 3, 9, 8), ((3, None),), {}),
    ("adaptive_max_pool3d", (2, 3, 5, 4, 6), ((2, 3, 2),), {}),
    ("adaptive_avg_pool1d", (2, 3, 9), (4,), {}),
    ("adaptive_avg_pool2d", (2, 3, 9, 8), ((3, 5),), {}),
    ("adaptive_avg_pool3d", (2, 3, 5, 4, 6), (2,), {}),
    ("roi_pool", (2, 3, 9, 8), (2,), {}),
    ("fractional_max_pool2d", (2, 3, 9, 8), (2,), dict(output_size=(5, 4), _random_samples=torch.tensor(
        [[[0.5, 0.25]] * 3, [[0.0, 0.875]] * 3]))),
    ("fractional_max_pool3d", (2, 3, 5, 4, 6), ((2, 1, 3),), dict(output_ratio=0.5, _random_samples=torch.full(
        (2, 3, 3), 0.375))),
]
BOXES = torch.tensor([[0, 0, 0, 4, 4.0], [1, 2, 1, 7, 8]])
DIFFERENTIABLE = ("max_pool", "max_unpool", "avg_pool", "adaptive", "lp", "fractional", "roi")


def _inputs(name, shape, requires_grad=False):
    x = distinct(shape, seed=len(shape)).abs()  # lp_pool's agreement needs x >= 0
    return x.requires_grad_() if requires_grad else x


def run_calls(module, inputs, device=None, only=None):
    """Each of CALLS made with ``module`` (pgt or F) on ``inputs`` (name -> tensor); a list
    of results."""
    results = []
    pooled = None
    for name, shape, args, kwargs in CALLS:
        if only is not None and not name.startswith(only):
            continue
        kw = dict(kwargs, device=device) if module is pgt else dict(kwargs)
        if name.startswith("max_unpool"):
            y, i = pooled
            results.append(getattr(module, name)(y, i, *args, **kw))
            continue
        if name == "roi_pool":
            results.append(pgt.roi_pool(inputs[name], BOXES, *args, **kw) if module is pgt else None)
            continue
        if name.startswith("max_pool"):
            pooled = getattr(module, name)(inputs[name], *args, return_indices=True, **kw)
            results.append(pooled[0])
            continue
        results.append(getattr(module, name)(inputs[name], *args, **kw))
    return results


def _op_names(graph):
    return [n.target.name() for n in graph.nodes if n.op == "call_function" and hasattr(n.target, "name")
            and n.target.name().startswith("poolgpu::")]


def test_export_captures_each_function_as_one_node(device):
    inputs = {name: _inputs(name, shape) for name, shape, _, _ in CALLS if shape}

    class Model(torch.nn.Module):
        def forward(self, inputs):
            return run_calls(pgt, inputs, device)

    program = torch.export.export(Model(), (inputs,))
    want = [f"poolgpu::{name}" + ("_with_indices" if name.startswith("max_pool") else "") for name, *_ in CALLS]
    assert _op_names(program.graph) == want
    for got, eager in zip(program.module()(inputs), run_calls(pgt, inputs, device), strict=True):
        assert torch.equal(got, eager)


def test_compile_fullgraph_equals_eager_forward_and_backward_without_warnings(device):
    def model(inputs):
        return sum(r.square().sum() for r in run_calls(pgt, inputs, device, only=DIFFERENTIABLE))

    def run(fn):
        inputs = {name: _inputs(name, shape, requires_grad=name.startswith(DIFFERENTIABLE))
                  for name, shape, _, _ in CALLS if shape}
        out = fn(inputs)
        out.backward()
        return out, [x.grad for x in inputs.values() if x.requires_grad]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled, compiled_grads = run(torch.compile(model, fullgraph=True, backend="aot_eager"))
    assert not [str(w.message) for w in caught]
    eager, eager_grads = run(model)
    assert torch.equal(compiled, eager)
    assert all(torch.equal(g, e) for g, e in zip(compiled_grads, eager_grads, strict=True))
    # and the results are PyTorch's
    inputs = {name: _inputs(name, shape) for name, shape, _, _ in CALLS if shape and name != "roi_pool"}
    only = tuple(d for d in DIFFERENTIABLE if d != "roi")   # (torch has no roi_pool)
    _close(sum(r.square().sum() for r in run_calls(pgt, inputs, device, only=only)),
           sum(r.square().sum() for r in run_calls(F, inputs, only=only)))


def test_jit_trace_computes_on_new_inputs(device):
    def f(t):
        return pgt.max_pool2d(t, 3, 2, 1, device=device) + 1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit.trace itself is deprecated
        traced = torch.jit.trace(f, torch.ones(1, 2, 8, 8))
    zeros = torch.zeros(1, 2, 8, 8)
    assert float(traced(zeros).sum()) == 32 == float(f(zeros).sum())
    x = distinct((1, 2, 7, 7))
    assert torch.equal(traced(x), F.max_pool2d(x, 3, 2, 1) + 1)


def test_meta_tensors_give_pytorchs_shapes():
    for name, shape, args, kwargs in CALLS:
        if shape is None or name == "roi_pool":
            continue
        for memory_format in (torch.contiguous_format, torch.channels_last, torch.channels_last_3d):
            if memory_format is not torch.contiguous_format and len(shape) != (4 if memory_format is torch.channels_last
                                                                                else 5):
                continue
            x = torch.empty(shape, device="meta").contiguous(memory_format=memory_format)
            got, want = getattr(pgt, name)(x, *args, **kwargs), getattr(F, name)(x, *args, **kwargs)
            assert got.device.type == "meta" and got.shape == want.shape and got.dtype == want.dtype, name
            assert got.is_contiguous(memory_format=memory_format), name
    meta = pgt.roi_pool(torch.empty(2, 3, 9, 8, device="meta"), BOXES.to("meta"), (2, 3))
    assert meta.shape == (2, 3, 2, 3) and meta.device.type == "meta"


def test_torch_func_grad_and_vmap(device):
    x = distinct((2, 3, 9, 8))
    for call in (lambda t: pgt.max_pool2d(t, 3, 2, 1, device=device),
                 lambda t: pgt.avg_pool2d(t, 3, 2, 1, device=device),
                 lambda t: pgt.adaptive_max_pool2d(t, (3, 4), device=device),
                 lambda t: pgt.adaptive_avg_pool2d(t, (3, 4), device=device),
                 lambda t: pgt.lp_pool2d(t.abs(), 3, 2, device=device),
                 lambda t: pgt.fractional_max_pool2d(t, 2, (4, 5), _random_samples=torch.full(
                     (t.shape[0] if t.dim() == 4 else 1, 3, 2), 0.5), device=device)):
        def loss(t):
            return call(t).square().sum()

        xg = x.clone().requires_grad_()
        loss(xg).backward()
        assert torch.equal(torch.func.grad(loss)(x), xg.grad)
        batch = torch.stack([x, x.flip(-1), -x])  # vmapped over a leading dimension
        assert torch.equal(torch.func.vmap(call)(batch), torch.stack([call(b) for b in batch]))
        unbatched = torch.func.vmap(call)(batch[:, 0])  # each (C, H, W)
        assert torch.equal(unbatched, torch.stack([call(b) for b in batch[:, 0]]))
        per_sample = torch.func.vmap(torch.func.grad(loss))(batch)
        assert torch.equal(per_sample, torch.stack([torch.func.grad(loss)(b) for b in batch]))
    y, i = pgt.max_pool2d(x, 2, return_indices=True, device=device)
    unpooled = torch.func.vmap(lambda v, j: pgt.max_unpool2d(v, j, 2, device=device))(y[None].expand(2, -1, -1, -1, -1),
                                                                                      i[None].expand(2, -1, -1, -1, -1))
    assert torch.equal(unpooled[1], F.max_unpool2d(y, i, 2))
    images = torch.stack([x, x + 1])
    rois = torch.func.vmap(lambda t: pgt.roi_pool(t, BOXES, 2, device=device))(images)
    assert torch.equal(rois[1], pgt.roi_pool(images[1], BOXES, 2, device=device))


@pytest.mark.parametrize("dims", [2, 3])
def test_channels_last_in_channels_last_out(device, dims):
    memory_format = torch.channels_last if dims == 2 else torch.channels_last_3d
    x = distinct((2, 3) + (7, 6, 5)[:dims]).contiguous(memory_format=memory_format)
    for name, args in ((f"max_pool{dims}d", (2,)), (f"avg_pool{dims}d", (3, 2, 1)), (f"lp_pool{dims}d", (2, 2)),
                       (f"adaptive_max_pool{dims}d", (3,)), (f"adaptive_avg_pool{dims}d", (3,))):
        xg, tg = x.clone().requires_grad_(), x.clone().requires_grad_()
        got, want = getattr(pgt, name)(xg, *args, device=device), getattr(F, name)(tg, *args)
        assert got.is_contiguous(memory_format=memory_format), name
        _close(got, want)
        if not name.startswith("lp"):
            got.square().sum().backward()
            want.square().sum().backward()
            assert xg.grad.is_contiguous(memory_format=memory_format), name
            _close(xg.grad, tg.grad)
    y, i = pgt.max_pool2d(x, 2, return_indices=True, device=device) if dims == 2 else \
        pgt.max_pool3d(x, 2, return_indices=True, device=device)
    assert i.is_contiguous(memory_format=memory_format)
    unpooled = getattr(pgt, f"max_unpool{dims}d")(y, i, 2, output_size=x.shape, device=device)
    assert unpooled.is_contiguous(memory_format=memory_format)
    assert torch.equal(unpooled, getattr(F, f"max_unpool{dims}d")(y, i, 2, output_size=x.shape))


def test_empty_batches_in_backward(device):
    x = torch.zeros(0, 3, 7, 6, requires_grad=True)
    for call in (lambda t: pgt.max_pool2d(t, 3, 2, 1, device=device),
                 lambda t: pgt.avg_pool2d(t, 3, 2, 1, divisor_override=2, device=device),
                 lambda t: pgt.adaptive_max_pool2d(t, 3, device=device),
                 lambda t: pgt.adaptive_avg_pool2d(t, 3, device=device),
                 lambda t: pgt.max_unpool2d(t, torch.zeros(t.shape, dtype=torch.int64), 2, device=device),
                 lambda t: pgt.lp_pool2d(t, 2, 2, device=device),
                 lambda t: pgt.fractional_max_pool2d(t, 2, 3, device=device)):
        x.grad = None
        call(x).sum().backward()
        assert x.grad.shape == x.shape


def test_negative_divisor_override_as_pytorch(device):
    x = distinct((2, 3, 7, 6))
    for divisor in (-2, -7):
        xg, tg = x.clone().requires_grad_(), x.clone().requires_grad_()
        got, want = pgt.avg_pool2d(xg, 3, 2, 1, divisor_override=divisor, device=device), \
            F.avg_pool2d(tg, 3, 2, 1, divisor_override=divisor)
        _close(got, want)
        got.backward(torch.ones_like(got))
        want.backward(torch.ones_like(want))
        _close(xg.grad, tg.grad)


@pytest.mark.parametrize("bad", ["cuda", "cpu", "vulkan", torch.device("cpu"), 0])
def test_device_takes_only_a_pg_device(bad):
    x = torch.zeros(1, 1, 4, 4)
    for call in (lambda: pgt.max_pool2d(x, 2, device=bad), lambda: pgt.avg_pool2d(x.numpy(), 2, device=bad),
                 lambda: pgt.roi_pool(x, BOXES[:1], 2, device=bad)):
        with pytest.raises(pg.ValidationError, match=r"takes a pg\.Device") as e:
            call()
        assert e.value.field == "device"


def test_double_backward_raises(device):
    x = torch.rand(1, 2, 6, 6, requires_grad=True)
    (grad,) = torch.autograd.grad(pgt.avg_pool2d(x, 2, device=device).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="no double backward"):
        grad.sum().backward()

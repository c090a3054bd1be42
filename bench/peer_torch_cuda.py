"""PyTorch on a CUDA device as a peer, in a worker process of its own (bench/peer_worker.py):
in the bench's process PyTorch made every timed poolgpu kernel, the copy included, 2-5x
slower on an H100.  Two peers use it: ``torch-cuda`` (``torch.nn.functional`` in eager mode)
and ``torch-cuda-compile`` (the same functions through ``torch.compile``); the worker's
``POOLGPU_BENCH_TORCH_COMPILE=1`` picks the second.

Inputs live on the GPU in the row's data type and memory format (NHWC: channels_last);
gradients come from autograd: ``max_fwd_bwd`` is forward plus ``autograd.grad``, and
``max_bwd``/``avg_bwd`` time ``autograd.grad`` alone over a forward graph kept from set-up.
Timing mirrors poolgpu's passes on GPUs: CUDA events around ``PER_PASS`` calls cycling
over ``ROTATE`` copies of the inputs (so they are not left in L2), per call.  The ``clone``
operator (spec ``{"op": "clone", "bytes": n}``) is PyTorch's ``clone()`` of an n-byte tensor:
one of the bench's ceilings (bench/ceiling.py).

For dry runs of the GPU run without a GPU (tests/test_gpu_run.py),
``POOLGPU_BENCH_TORCH_DEVICE=cpu`` runs the same code on the CPU and
``POOLGPU_BENCH_TORCH_COMPILE_BACKEND=eager`` compiles with dynamo alone (no inductor);
both are named in the peer's version."""

from __future__ import annotations

import os

import numpy as np
import torch
import torch.nn.functional as F

from .peer_base import PER_PASS, ROTATE, Prepared, Unsupported, flat_from_plane, plane_from_flat
from .peer_torch import _laid_out

NAME = "torch-cuda"
COMPILE = os.environ.get("POOLGPU_BENCH_TORCH_COMPILE") == "1"
DEVICE = os.environ.get("POOLGPU_BENCH_TORCH_DEVICE", "cuda")
COMPILE_BACKEND = os.environ.get("POOLGPU_BENCH_TORCH_COMPILE_BACKEND", "inductor")


def _why_no_cuda() -> str:
    if torch.version.cuda is None:
        return f"torch {torch.__version__} is built without CUDA"
    if not torch.cuda.is_available():
        return f"torch {torch.__version__} (CUDA {torch.version.cuda}) finds no CUDA device"
    return ""


def version() -> str:
    """Raises where there is no CUDA device: the worker's hello then says why."""
    overrides = [f"{name}={value}" for name, value, default in (
        ("POOLGPU_BENCH_TORCH_DEVICE", DEVICE, "cuda"), ("POOLGPU_BENCH_TORCH_COMPILE_BACKEND", COMPILE_BACKEND, "inductor"))
        if value != default]
    if DEVICE != "cuda":
        return f"{torch.__version__} on {DEVICE} ({', '.join(overrides)})"
    why = _why_no_cuda()
    if why:
        raise RuntimeError(why)
    return f"{torch.__version__} on {torch.cuda.get_device_name()}" + (f" ({', '.join(overrides)})" if overrides else "")


class _Timed(Prepared):
    """``call(args)`` computes one result from one copy's arguments."""

    def __init__(self, call, copies, names, convert, device):
        self._call, self._copies, self._names, self._convert = call, copies, names, convert
        self._cuda = torch.device(device).type == "cuda"
        self._last = None

    def run(self) -> None:
        result = self._call(self._copies[0])
        self._last = result if isinstance(result, tuple) else (result,)
        if self._cuda:
            torch.cuda.synchronize()

    def seconds(self) -> float:
        if not self._cuda:  # (the same code on the CPU: the tests run it there)
            return super().seconds()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for j in range(PER_PASS):
            self._call(self._copies[j % len(self._copies)])
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e-3 / PER_PASS

    def outputs(self) -> dict:
        out = {}
        for name, value in zip(self._names, self._last):
            array = value.detach().cpu().contiguous().numpy()
            out[name] = self._convert.get(name, lambda a: a)(array)
        return out

    def release(self) -> None:
        self._copies, self._last = None, None
        if self._cuda:
            torch.cuda.empty_cache()


def _forward(spec: dict):
    """(function of the input tensors, output names) of a forward operator, or None."""
    op, dims = spec["op"], spec["dims"]
    pad = tuple(spec["start_padding"])
    pool = dict(kernel_size=tuple(spec["window_size"]), stride=tuple(spec["strides"]))
    dilation = tuple(spec.get("dilations") or (1,) * dims)
    max_pool = getattr(F, f"max_pool{dims}d")
    if op in ("max", "max_dil2", "max_fwd_bwd", "max_bwd"):
        return (lambda x: max_pool(x, padding=pad, dilation=dilation, **pool)), ("y",)
    if op == "max_idx":
        return (lambda x: max_pool(x, padding=pad, dilation=dilation, return_indices=True, **pool)), ("y", "idx")
    if op in ("avg", "avg_incl_pad", "avg_bwd"):
        average, include = getattr(F, f"avg_pool{dims}d"), spec["include_padding"]
        return (lambda x: average(x, padding=pad, count_include_pad=include, **pool)), ("y",)
    if op == "lp2":
        if any(pad):
            raise Unsupported("lp_pool has no padding")
        lp = getattr(F, f"lp_pool{dims}d")
        lp_sizes = {k: v[0] for k, v in pool.items()} if dims == 1 else pool  # (lp_pool1d takes ints only)
        return (lambda x: lp(x, 2, **lp_sizes)), ("y",)
    if op == "unpool":
        unpool, size = getattr(F, f"max_unpool{dims}d"), tuple(spec["x_sizes"][2:])
        return (lambda v, idx: unpool(v, idx, padding=pad, output_size=size, **pool)), ("z",)
    if op in ("adaptive_max", "adaptive_avg"):
        kind = "max" if op == "adaptive_max" else "avg"
        adaptive, size = getattr(F, f"adaptive_{kind}_pool{dims}d"), tuple(spec["output_size"])
        return (lambda x: adaptive(x, size)), ("y",)
    return None


GRADIENTS_ALONE = ("max_bwd", "avg_bwd")


def _compiled(function):
    torch._dynamo.reset()  # each operator compiled afresh: no cache limit reached, no silent eager fallback
    return torch.compile(function, fullgraph=True, dynamic=False, backend=COMPILE_BACKEND)


class _Clone(_Timed):
    """``clone()`` of an n-byte tensor; its output is whether the copy equals the source
    (compared where it lives: a GB is not sent back)."""

    def outputs(self) -> dict:
        return {"same": bool(torch.equal(self._last[0], self._copies[0]))}


def _clone(nbytes: int, device: str) -> Prepared:
    source = torch.randint(-2**31, 2**31 - 1, (nbytes // 4,), dtype=torch.int32, device=device)
    copies = [source] + [source.clone() for _ in range(ROTATE - 1)]
    prepared = _Clone(lambda t: t.clone(), copies, ("y",), {}, device)
    prepared.run()
    return prepared


def prepare(spec: dict, inputs: dict, layout: str, device: str = None, compile: bool = None, **_) -> Prepared:
    op, device = spec["op"], device or DEVICE
    if op == "clone":
        return _clone(spec["bytes"], device)
    if tuple(spec["start_padding"]) != tuple(spec["end_padding"]):
        raise Unsupported("PyTorch pads both ends alike")
    if op == "roi":
        raise Unsupported("ROI pooling needs torchvision")
    found = _forward(spec)
    if found is None:
        raise Unsupported(f"no {op}")
    forward, names = found
    if COMPILE if compile is None else compile:
        forward = _compiled(forward)
    x_sizes = tuple(spec["x_sizes"])
    convert = {"idx": lambda a: flat_from_plane(a, x_sizes)}

    def laid_out(name, array):
        if name == "idx":  # poolgpu's flat indices -> PyTorch's per plane, int64
            array = plane_from_flat(array, x_sizes)
        return _laid_out(array, layout).to(device)

    if op in GRADIENTS_ALONE and "x" not in inputs:  # the average gradient: x only gives the shape
        inputs = dict(inputs, x=np.zeros(x_sizes, inputs["dy"].dtype))
    first = {name: laid_out(name, array) for name, array in inputs.items()}
    copies = [first] + [{name: t.clone(memory_format=torch.preserve_format) for name, t in first.items()}
                        for _ in range(ROTATE - 1)]
    arguments = ("v", "idx") if op == "unpool" else ("x",)

    if op in GRADIENTS_ALONE:  # autograd's backward alone, over each copy's forward graph (kept)
        for t in copies:
            t["x"].requires_grad_()
            t["y"] = forward(t["x"])

        def call(t):
            return torch.autograd.grad(t["y"], t["x"], t["dy"], retain_graph=True)[0]

        names = ("dx",)
    elif op == "max_fwd_bwd":
        for t in copies:
            t["x"].requires_grad_()

        def call(t):
            y = forward(t["x"])
            return y.detach(), torch.autograd.grad(y, t["x"], t["dy"])[0]

        names = ("y", "dx")
    else:
        def call(t):
            with torch.no_grad():
                return forward(*(t[name] for name in arguments))

    prepared = _Timed(call, copies, names, convert, device)
    try:
        prepared.run()  # the first run: PyTorch refuses some types only when called, compiles then
    except (RuntimeError, NotImplementedError, AssertionError) as exc:
        raise Unsupported(f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:300]) from None
    return prepared


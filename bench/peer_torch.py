"""PyTorch on the CPU as a peer (in the bench's own process): what a user would run without
a GPU.  NHWC is PyTorch's channels_last memory format (a permuted view for 1-D)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from .peer_base import Prepared, Unsupported, flat_from_plane, plane_from_flat

NAME = "torch"


def version() -> str:
    return torch.__version__


def _from_numpy(array: np.ndarray) -> torch.Tensor:
    """A torch tensor of ``array``'s values (NumPy's bfloat16, ml_dtypes', by its bits)."""
    array = np.ascontiguousarray(array)
    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def _to_numpy(t: torch.Tensor) -> np.ndarray:
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        import ml_dtypes
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _laid_out(array: np.ndarray, layout: str) -> torch.Tensor:
    t = _from_numpy(array)
    if layout == "nchw":
        return t
    if t.dim() == 4:
        return t.contiguous(memory_format=torch.channels_last)
    if t.dim() == 5:
        return t.contiguous(memory_format=torch.channels_last_3d)
    return t.permute(0, 2, 1).contiguous().permute(0, 2, 1)  # NCW seen from an NWC buffer


class _Call(Prepared):
    def __init__(self, compute, names, convert=None):
        self._compute, self._names, self._convert = compute, names, convert or {}
        self._last = None

    def run(self) -> None:
        result = self._compute()
        self._last = result if isinstance(result, tuple) else (result,)

    def outputs(self) -> dict:
        out = {}
        for name, value in zip(self._names, self._last):
            array = _to_numpy(value)
            out[name] = self._convert.get(name, lambda a: a)(array)
        return out


def _as_2d(t: torch.Tensor) -> torch.Tensor:
    """1-D pooling through the 2-D kernels (PyTorch has no 1-D backward ops): H = 1."""
    return t.unsqueeze(2)


def prepare(spec: dict, inputs: dict, layout: str, **_) -> Prepared:
    op, dims = spec["op"], spec["dims"]
    pad = tuple(spec["start_padding"])
    if pad != tuple(spec["end_padding"]):
        raise Unsupported("PyTorch pads both ends alike")
    window, strides = tuple(spec["window_size"]), tuple(spec["strides"])
    dilations = tuple(spec.get("dilations") or (1,) * dims)
    x_sizes = tuple(spec["x_sizes"])
    t = {name: _laid_out(array, layout) for name, array in inputs.items() if name not in ("idx", "rois")}
    pool = dict(kernel_size=window, stride=strides)
    max_pool = getattr(F, f"max_pool{dims}d")
    flat = {"idx": lambda a: flat_from_plane(a, x_sizes)}

    if op in ("max", "max_dil2", "max_idx"):
        with_indices = op == "max_idx"

        def compute():
            with torch.no_grad():
                return max_pool(t["x"], padding=pad, dilation=dilations, return_indices=with_indices, **pool)

        prepared = _Call(compute, ("y", "idx") if with_indices else ("y",), flat)
    elif op in ("avg", "avg_incl_pad"):
        average = getattr(F, f"avg_pool{dims}d")
        include = spec["include_padding"]

        def compute():
            with torch.no_grad():
                return average(t["x"], padding=pad, count_include_pad=include, **pool)

        prepared = _Call(compute, ("y",))
    elif op == "lp2":
        if any(pad):
            raise Unsupported("lp_pool has no padding")
        lp = getattr(F, f"lp_pool{dims}d")
        lp_sizes = {k: v[0] for k, v in pool.items()} if dims == 1 else pool  # (lp_pool1d takes ints only)

        def compute():
            with torch.no_grad():
                return lp(t["x"], 2, **lp_sizes)

        prepared = _Call(compute, ("y",))
    elif op == "max_fwd_bwd":
        x = t["x"].detach().requires_grad_()

        def compute():
            x.grad = None
            y = max_pool(x, padding=pad, dilation=dilations, **pool)
            y.backward(t["dy"])
            return y.detach(), x.grad

        prepared = _Call(compute, ("y", "dx"))
    elif op in ("max_bwd", "avg_bwd"):
        # The backward kernels alone, as autograd calls them (the forward's indices precomputed).
        k = max(dims, 2)
        lift = _as_2d if dims == 1 else (lambda a: a)
        one = (1,) if dims == 1 else ()
        geometry = dict(kernel_size=one + window, stride=one + strides, padding=(0,) * len(one) + pad)
        dy = lift(t["dy"])
        if op == "max_bwd":
            x = lift(t["x"])
            with torch.no_grad():
                _, indices = getattr(F, f"max_pool{k}d")(x, dilation=one + dilations, return_indices=True, **geometry)
            backward = getattr(torch.ops.aten, f"max_pool{k}d_with_indices_backward")
            args = (dy, x, geometry["kernel_size"], geometry["stride"], geometry["padding"], one + dilations, False, indices)
        else:
            x = lift(torch.empty(x_sizes, dtype=dy.dtype))  # only its shape matters
            backward = getattr(torch.ops.aten, f"avg_pool{k}d_backward")
            args = (dy, x, geometry["kernel_size"], geometry["stride"], geometry["padding"], False,
                    spec["include_padding"], None)

        def compute():
            return backward(*args).reshape(x_sizes)

        prepared = _Call(compute, ("dx",))
    elif op == "unpool":
        unpool = getattr(F, f"max_unpool{dims}d")
        indices = _laid_out(plane_from_flat(inputs["idx"], x_sizes), layout)

        def compute():
            with torch.no_grad():
                return unpool(t["v"], indices, padding=pad, output_size=x_sizes[2:], **pool)

        prepared = _Call(compute, ("z",))
    elif op in ("adaptive_max", "adaptive_avg"):
        kind = "max" if op == "adaptive_max" else "avg"
        adaptive = getattr(F, f"adaptive_{kind}_pool{dims}d")

        def compute():
            with torch.no_grad():
                return adaptive(t["x"], spec["output_size"])

        prepared = _Call(compute, ("y",))
    elif op in ("fractional", "fractional_bwd"):
        fractional = getattr(F, f"fractional_max_pool{dims}d")
        pool = dict(kernel_size=window, output_size=tuple(spec["out_sizes"][2:]),
                    _random_samples=_from_numpy(inputs["samples"]))
        if op == "fractional":
            def compute():
                with torch.no_grad():
                    return fractional(t["x"], **pool)
        else:
            x = t["x"].detach().requires_grad_()

            def compute():   # (the forward pass, as autograd needs it, and the backward)
                x.grad = None
                fractional(x, **pool).backward(t["dy"])
                return x.grad

        prepared = _Call(compute, ("y",) if op == "fractional" else ("dx",))
    elif op in ("qavg", "qavg_ort", "qavg_torch"):
        if op != "qavg_torch":
            raise Unsupported(f"PyTorch's quantized average pooling rounds as {op} does not")
        quantized = torch._make_per_tensor_quantized_tensor(t["x"], spec["scale"], spec["zero_point"])

        def compute():
            return F.avg_pool2d(quantized, padding=pad, count_include_pad=spec["include_padding"], **pool).int_repr()

        prepared = _Call(compute, ("y",))
    elif op == "roi":
        raise Unsupported("ROI pooling needs torchvision")
    else:
        raise Unsupported(f"no {op}")
    try:
        prepared.run()  # the first run: PyTorch refuses some types only when called
    except (RuntimeError, NotImplementedError) as exc:
        raise Unsupported(str(exc).splitlines()[0]) from None
    return prepared

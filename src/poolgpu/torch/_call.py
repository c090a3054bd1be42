"""One call of a poolgpu.torch function: the input as a batched poolgpu Tensor, the results
given back in the input's kind (torch, NumPy, poolgpu), and the autograd node."""

from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple, Union

import numpy as np
import torch
from torch.autograd.function import once_differentiable

from ..arguments import array, shown
from ..device import Device, default_device
from ..tensor import Tensor
from ..errors import ValidationError
from ..tensor_desc import MAX_ELEMENTS, TensorDesc

#: What the functions take and give: a result is of its input's kind.
Input = Union[torch.Tensor, np.ndarray, Tensor]
Output = Union[torch.Tensor, np.ndarray, Tensor]
#: A result, or (result, indices) with ``return_indices``.
Result = Union[Output, Tuple[Output, Output]]
Size = Union[int, Sequence[int]]

FLOATS = ("float32", "float16")
MAX_TYPES = FLOATS + ("int8", "uint8", "int16", "int32", "int64")


def _type_error(function: str, name: str, types: tuple, kind: str) -> ValidationError:
    if name == "bool" and "uint8" in types:
        how = "input.to(torch.uint8)" if kind == "torch" else "input.astype(np.uint8)"
    elif name in ("uint16", "uint32", "uint64") and "int64" in types:
        how = "input.long()" if kind == "torch" else "input.astype(np.int64)"
    else:
        how = "input.float() (or .half())" if kind == "torch" else "input.astype(np.float32)"
    return ValidationError("input", f"{function} takes {', '.join(types)} (poolgpu never narrows a type silently); "
                                    f"got {name}: convert it first, e.g. {how}")


class Call:
    """One call's input: its sizes with a batch dimension, the poolgpu Tensor holding it
    (uploaded on first use), and how results go back (``give``)."""

    __slots__ = ("function", "kind", "source", "torch_device", "device", "unbatched", "sizes", "dtype", "_x")

    def __init__(self, input, function: str, dims: int, types: tuple, device: Optional[Device],
                 ranks: Optional[tuple] = None):
        self.function = function
        if isinstance(input, torch.Tensor):
            kind, name, shape = "torch", str(input.dtype).rpartition(".")[2], tuple(input.shape)
            self.torch_device = input.device
        elif isinstance(input, Tensor):
            kind, name, shape = "tensor", input.dtype.name, input.sizes
        elif isinstance(input, np.ndarray):
            input = array(input, "input", ranks=None, empty=True)
            kind, name, shape = "numpy", input.dtype.name, input.shape
        else:  # as PyTorch refuses lists and scalars
            raise ValidationError("input", f"{function} takes a torch.Tensor, a NumPy array or a pg.Tensor, "
                                           f"got {shown(input)}")
        if name not in types:
            raise _type_error(function, name, types, kind)
        ranks = ranks or (dims + 1, dims + 2)
        if len(shape) not in ranks:
            what = " or ".join(f"{r}-D" for r in ranks)
            raise ValidationError("input", f"{function} expects a {what} input ({dims + 2}-D: (N, C, ...); "
                                           f"{dims + 1}-D: unbatched (C, ...)), got shape {shape}")
        self.kind, self.source = kind, input
        self.unbatched = len(shape) == dims + 1
        self.sizes = (1,) + shape if self.unbatched else shape
        self.dtype = np.dtype(name)
        if device is None:
            device = input.device if kind == "tensor" else default_device()
        self.device = device
        self._x = None

    def require_nonzero(self, first: int = 1) -> None:
        """PyTorch's rule: every dimension but the batch has a positive size."""
        if any(s == 0 for s in self.sizes[first:]):
            shape = self.sizes[1:] if self.unbatched else self.sizes
            raise ValidationError("input", f"{self.function}: only the batch dimension may be empty, got shape {shape}")

    def check_output(self, sizes: tuple, name: str) -> None:
        """Refuse a batched output of ``sizes`` larger than a poolgpu tensor holds, naming the
        argument that sets it (PyTorch fails allocating it)."""
        if math.prod(sizes) > MAX_ELEMENTS:
            shape = sizes[1:] if self.unbatched else sizes
            raise ValidationError(name, f"{self.function}: the output {shape} would have more than 2^32 - 1 elements, "
                                        f"the most a poolgpu tensor holds")

    def host(self) -> np.ndarray:
        """The input's values as a batched NumPy array (a view where possible)."""
        source = self.source
        if self.kind == "torch":
            source = source.detach()
            if source.device.type != "cpu":
                source = source.cpu()
            array = source.numpy()
        elif self.kind == "tensor":
            array = source.numpy()
        else:
            array = source
        return array[None] if self.unbatched else array

    def tensor(self) -> Tensor:
        """The batched input on ``device``."""
        if self._x is None:
            source = self.source
            if self.kind == "tensor" and source.device is self.device:
                self._x = _leading_one(source) if self.unbatched else source
            else:
                self._x = self.device.upload(self.host())
        return self._x

    def give(self, value):
        """A batched result (a poolgpu Tensor, or a NumPy array made on the host) in the
        input's kind, without the batch dimension for an unbatched input."""
        if self.kind == "tensor":
            tensor = value if isinstance(value, Tensor) else self.device.upload(value)
            return _drop_leading(tensor) if self.unbatched else tensor
        array = value.numpy() if isinstance(value, Tensor) else value
        if self.unbatched:
            array = array[0]
        if self.kind == "numpy":
            return array
        result = torch.from_numpy(array)
        return result if self.torch_device.type == "cpu" else result.to(self.torch_device)

    def grad_input(self, dy: torch.Tensor) -> Tensor:
        """An incoming gradient (a torch tensor of an output's shape) as a batched Tensor."""
        dy = dy.detach()
        if dy.device.type != "cpu":
            dy = dy.cpu()
        array = dy.numpy()
        return self.device.upload(array[None] if self.unbatched else array)

    def run(self, forward, backward=None, what: str = ""):
        """The results of ``forward()`` (batched Tensors or arrays) in kind; differentiable
        through ``backward(dy Tensor) -> dx Tensor`` where the input requires grad."""
        if self.kind == "torch" and self.source.requires_grad and torch.is_grad_enabled():
            return _Pooling.apply(self.source, self, forward, backward, what)
        return tuple(self.give(v) for v in forward())


def _leading_one(t: Tensor) -> Tensor:
    d = t.desc
    desc = TensorDesc(d.data_type, (1,) + d.sizes, (math.prod(d.sizes),) + d.strides, d.total_size_in_bytes)
    return t.device.wrap(t.buffer, desc, t.offset)


def _drop_leading(t: Tensor) -> Tensor:
    d = t.desc
    return t.device.wrap(t.buffer, TensorDesc(d.data_type, d.sizes[1:], d.strides[1:], d.total_size_in_bytes), t.offset)


class _Pooling(torch.autograd.Function):
    """A pooling call as an autograd node: forward runs the call, backward poolgpu's gradient."""

    @staticmethod
    def forward(ctx, source, call, forward, backward, what):
        outputs = tuple(call.give(v) for v in forward())
        ctx.call, ctx.backward_fn, ctx.what = call, backward, what
        ctx.mark_non_differentiable(*(o for o in outputs if not o.is_floating_point()))
        return outputs

    @staticmethod
    @once_differentiable
    def backward(ctx, dy, *_):
        call = ctx.call
        if ctx.backward_fn is None:
            raise RuntimeError(
                f"poolgpu.torch.{call.function} has no backward ({ctx.what}); use torch.nn.functional's, or "
                f"call it on a tensor that does not require grad (e.g. input.detach())"
            )
        dx = ctx.backward_fn(call.grad_input(dy))
        return call.give(dx), None, None, None, None


def plane_indices(flat: Tensor, plane: int) -> np.ndarray:
    """poolgpu's flat indices over the whole tensor as PyTorch's int64 indices within each
    (n, c) plane (on the host: one pass)."""
    return flat.numpy().astype(np.int64) % plane


def empty_result(sizes: tuple, dtype) -> np.ndarray:
    return np.zeros(sizes, dtype)

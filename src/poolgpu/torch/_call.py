"""One call of a poolgpu.torch function: the input as a batched poolgpu Tensor, and a plan of
its results (their shapes, and how to compute them) given back in the input's kind (torch,
NumPy, poolgpu).  The same plan serves the custom operators' real and fake (shape-only)
implementations and the NumPy and pg.Tensor calls."""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from ..arguments import array, shown
from ..device import Device, default_device
from ..errors import ValidationError
from ..tensor import Tensor
from ..tensor_desc import MAX_ELEMENTS, TensorDesc
from ._arguments import geometry

#: What the functions take and give: a result is of its input's kind.
Input = Union[torch.Tensor, np.ndarray, Tensor]
Output = Union[torch.Tensor, np.ndarray, Tensor]
#: A result, or (result, indices) with ``return_indices``.
Result = Union[Output, Tuple[Output, Output]]
Size = Union[int, Sequence[int]]

FLOATS = ("float32", "float16")
MAX_TYPES = FLOATS + ("int8", "uint8", "int16", "int32", "int64")


def checked_device(device: Any, function: str) -> Optional[Device]:
    """``device=``: None or a pg.Device.  A torch device names where torch computes, not a
    WebGPU adapter, so it is refused with what to pass instead."""
    if device is None or isinstance(device, Device):
        return device
    raise ValidationError("device", f"{function}: device takes a pg.Device (e.g. pg.Device(backend='vulkan') or "
                                    f"pg.default_device()), or None for pg.default_device(), got {shown(device)}; "
                                    f"the results come back on the input's own torch device")


def memory_format(t: torch.Tensor) -> torch.memory_format:
    """PyTorch's suggested memory format of a 4-D or 5-D tensor: channels_last (3d) where its
    strides are, else contiguous (as ``Tensor.suggest_memory_format()`` in C++)."""
    for rank, fmt in ((4, torch.channels_last), (5, torch.channels_last_3d)):
        if t.dim() == rank and not t.is_contiguous() and t.is_contiguous(memory_format=fmt):
            return fmt
    return torch.contiguous_format


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
    (uploaded on first use), and how results go back (``give``).  A torch input may be a fake
    or meta tensor: nothing reads its values before ``tensor()`` or ``host()``."""

    __slots__ = ("function", "kind", "source", "unbatched", "sizes", "dtype", "_device", "_x")

    def __init__(self, input, function: str, dims: int, types: tuple, device: Optional[Device],
                 ranks: Optional[tuple] = None):
        self.function = function
        if isinstance(input, torch.Tensor):
            kind, name, shape = "torch", str(input.dtype).rpartition(".")[2], tuple(input.shape)
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
        self._device = input.device if device is None and kind == "tensor" else checked_device(device, function)
        self._x = None

    @property
    def device(self) -> Device:
        """Where the call computes (pg.default_device() unless given; opened on first use)."""
        if self._device is None:
            self._device = default_device()
        return self._device

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

    def geometry(self, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple, ceil_mode: bool,
                 check_input_size: bool = False) -> tuple:
        """PyTorch's checks of a fixed window on this input: (window fields, output spatial sizes)."""
        spatial = self.sizes[2:]
        # (the checks are cached by value; a traced graph's symbolic sizes are not hashable)
        checks = geometry if all(type(n) is int for n in spatial) else geometry.__wrapped__
        return checks(self.function, spatial, tuple(kernel), tuple(stride), tuple(padding), tuple(dilation),
                      ceil_mode, check_input_size)

    def host(self) -> np.ndarray:
        """The input's values as a batched NumPy array (a view where possible)."""
        return self.host_of(self.source)

    def host_of(self, value) -> np.ndarray:
        """Another array of the call (an incoming gradient, indices) batched as the input."""
        if isinstance(value, torch.Tensor):
            array = value.detach().cpu().numpy()
        elif isinstance(value, Tensor):
            array = value.numpy()
        else:
            array = value
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

    def upload(self, value) -> Tensor:
        """Another tensor of the call (an incoming gradient, indices), batched as the input, on
        ``device``."""
        return self.device.upload(self.host_of(value))

    def give(self, value):
        """A batched result (a poolgpu Tensor, or a NumPy array made on the host) in the
        input's kind, without the batch dimension for an unbatched input; a torch result on
        the input's torch device, in its memory format."""
        if self.kind == "tensor":
            tensor = value if isinstance(value, Tensor) else self.device.upload(value)
            return _drop_leading(tensor) if self.unbatched else tensor
        array = value.numpy() if isinstance(value, Tensor) else value
        if self.unbatched:
            array = array[0]
        if self.kind == "numpy":
            return array
        return torch.from_numpy(array).to(self.source.device).contiguous(memory_format=memory_format(self.source))

    def empty(self, sizes: tuple, dtype: np.dtype) -> torch.Tensor:
        """A torch result's shape, type, device and memory format, without its values (what a
        fake implementation returns)."""
        shape = sizes[1:] if self.unbatched else sizes
        return torch.empty(shape, dtype=getattr(torch, np.dtype(dtype).name), device=self.source.device,
                           memory_format=memory_format(self.source))


class Plan(NamedTuple):
    """A checked call: its batched results' (sizes, NumPy type), and ``forward()`` computing
    them (batched poolgpu Tensors or NumPy arrays)."""

    call: Call
    outputs: tuple
    forward: Callable[[], tuple]

    def run(self) -> tuple:
        """The results in the input's kind (zeros of an empty result without GPU work)."""
        if any(math.prod(sizes) == 0 for sizes, _ in self.outputs):
            values = tuple(np.zeros(sizes, dtype) for sizes, dtype in self.outputs)
        else:
            values = self.forward()
        return tuple(self.call.give(v) for v in values)

    def fake(self) -> tuple:
        """Empty torch results of the right shapes (a fake or meta implementation)."""
        return tuple(self.call.empty(sizes, dtype) for sizes, dtype in self.outputs)


def gradient_plan(plan: Plan, compute: Callable[[], tuple]) -> Plan:
    """The plan of a call's input gradient: of the input's shape and type, ``compute()``."""
    return Plan(plan.call, ((plan.call.sizes, plan.call.dtype),), compute)


def no_gradient(module: str) -> Callable[..., Plan]:
    """The gradient plan of a function poolgpu does not differentiate: it raises, naming the
    function of ``module`` (e.g. ``"torchvision.ops"``) that does."""

    def gradient(function, grad_output, input, *arguments, device):
        roi = function == "roi_pool"
        call = Call(input, function, 2 if roi else int(function[-2]), FLOATS, device, ranks=(4,) if roi else None)

        def compute():
            raise RuntimeError(f"poolgpu.torch.{function} has no backward; use {module}.{function}'s, or call it on "
                               f"a tensor that does not require grad (e.g. input.detach())")

        return Plan(call, ((call.sizes, call.dtype),), compute)

    return gradient


def _leading_one(t: Tensor) -> Tensor:
    d = t.desc
    desc = TensorDesc(d.data_type, (1,) + d.sizes, (math.prod(d.sizes),) + d.strides, d.total_size_in_bytes)
    return t.device.wrap(t.buffer, desc, t.offset)


def _drop_leading(t: Tensor) -> Tensor:
    d = t.desc
    return t.device.wrap(t.buffer, TensorDesc(d.data_type, d.sizes[1:], d.strides[1:], d.total_size_in_bytes), t.offset)


def plane_indices(flat: Tensor, plane: int) -> np.ndarray:
    """poolgpu's flat indices over the whole tensor as PyTorch's int64 indices within each
    (n, c) plane (on the host: one pass)."""
    return flat.numpy().astype(np.int64) % plane

"""One call of a poolgpu.torch function: the input as a batched poolgpu Tensor, and a plan of
its results (their shapes, and how to compute them) given back in the input's kind (torch,
NumPy, poolgpu).  The same plan serves the custom operators' real and fake (shape-only)
implementations and the NumPy and pg.Tensor calls."""

from __future__ import annotations

import math
import threading
import weakref
from collections import OrderedDict
from typing import Any, Callable, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from ..arguments import array, shown
from ..device import Device, default_device
from ..dtypes import DataType
from ..errors import ValidationError
from ..tensor import Tensor
from ..tensor_desc import MAX_ELEMENTS, TensorDesc, packed_desc
from ._arguments import geometry

#: What the functions take and give: a result is of its input's kind.
Input = Union[torch.Tensor, np.ndarray, Tensor]
Output = Union[torch.Tensor, np.ndarray, Tensor]
#: A result, or (result, indices) with ``return_indices``.
Result = Union[Output, Tuple[Output, Output]]
Size = Union[int, Sequence[int]]

FLOATS = ("float32", "float16", "bfloat16")
MAX_TYPES = FLOATS + ("int8", "uint8", "int16", "int32", "int64")
#: bfloat16 values on the host, inside poolgpu.torch: their bits as uint16 (NumPy has no
#: bfloat16 of its own, and ml_dtypes' is optional).  No other uint16 array occurs here.
BFLOAT16_BITS = np.dtype(np.uint16)


def host_values(t: Tensor) -> np.ndarray:
    """A pg.Tensor's values; BFLOAT16 as BFLOAT16_BITS."""
    return _as_read(t).numpy()


def _as_read(t: Tensor) -> Tensor:
    """The Tensor whose values are read back in ``t``'s place: ``t``, or a BFLOAT16 one's
    bits as UINT16 (NumPy's BFLOAT16_BITS)."""
    if t.data_type != DataType.BFLOAT16:
        return t
    d = t.desc
    return t.device.wrap(t.buffer, TensorDesc(DataType.UINT16, d.sizes, d.strides, d.total_size_in_bytes), t.offset)


def as_host(value: Union[Tensor, np.ndarray]) -> np.ndarray:
    """A result of :meth:`Call.compute` on the host: an array as it is, a Tensor's values."""
    return value if isinstance(value, np.ndarray) else host_values(value)


def as_float(values: np.ndarray) -> np.ndarray:
    """Host values (BFLOAT16_BITS too) as float64."""
    if values.dtype == BFLOAT16_BITS:
        return (values.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return values.astype(np.float64)


def of_type(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Float values rounded to ``dtype`` (to nearest, ties to even; BFLOAT16_BITS: to
    bfloat16, NaN as the canonical quiet NaN)."""
    if dtype != BFLOAT16_BITS:
        return values.astype(dtype)
    bits = values.astype(np.float32).view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where((bits & 0x7FFFFFFF) > 0x7F800000, np.uint16(0x7FC0), rounded)


def negated(values: np.ndarray) -> np.ndarray:
    """-values, exactly (BFLOAT16_BITS: the sign bit flipped)."""
    return values ^ np.uint16(0x8000) if values.dtype == BFLOAT16_BITS else np.negative(values)


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

    __slots__ = ("function", "kind", "source", "unbatched", "sizes", "dtype", "_device", "_x", "_temporaries")

    def __init__(self, input, function: str, dims: int, types: tuple, device: Optional[Device],
                 ranks: Optional[tuple] = None):
        self.function = function
        if isinstance(input, torch.Tensor):
            if input.is_quantized:  # (the functions taking them do before a Call)
                raise ValidationError("input", f"{function} takes no quantized tensors (max_pool2d, avg_pool2d and "
                                               f"adaptive_avg_pool2d do): dequantize it first, input.dequantize()")
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
        self.dtype = BFLOAT16_BITS if name == "bfloat16" else np.dtype(name)
        self._device = input.device if device is None and kind == "tensor" else checked_device(device, function)
        self._x = None
        self._temporaries = []  # tensors in the device's pooled buffers (tensor(), upload()), for recycle()

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
        """Another array of the call (an incoming gradient, indices) batched as the input;
        bfloat16 as BFLOAT16_BITS."""
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu()
            bfloat16 = value.dtype == torch.bfloat16
            array = value.view(torch.int16).numpy().view(BFLOAT16_BITS) if bfloat16 else value.numpy()
        elif isinstance(value, Tensor):
            array = host_values(value)
        else:
            array = value.view(BFLOAT16_BITS) if value.dtype.name == "bfloat16" else value
        return array[None] if self.unbatched else array

    def tensor(self) -> Tensor:
        """The batched input on ``device``."""
        if self._x is None:
            source = self.source
            if self.kind == "tensor" and source.device is self.device:
                self._x = _leading_one(source) if self.unbatched else source
            elif self.kind == "torch" and source.requires_grad:  # its backward reads it again
                self._x = _kept_input(source, self.device, self.sizes)
                if self._x is None:
                    self._x = self.upload_host(self.host())
                    _keep_input(source, self.device, self._x)
            else:
                self._x = self._upload_temporary(self.host())
        return self._x

    def compute(self, desc, *tensors: Tensor, view: Optional[Callable[[Tensor], Tensor]] = None) -> tuple:
        """The results of the operator ``desc`` on ``tensors`` (on ``device``): poolgpu
        Tensors for a pg.Tensor input; for a torch or NumPy input, NumPy arrays (BFLOAT16 as
        BFLOAT16_BITS), computed and read back in one submission through the device's pooled
        buffers (docs/design.md, "Host round trips").  ``view(result)``: the Tensor taken in
        each result's place (another layout of its bytes), where given."""
        op = self.device.compile(desc)
        if self.kind != "tensor":
            return op._to_host(tensors, _as_read if view is None else lambda t: _as_read(view(t)))
        results = op(*tensors)
        results = results if isinstance(results, tuple) else (results,)
        return results if view is None else tuple(map(view, results))

    def upload(self, value) -> Tensor:
        """Another tensor of the call (an incoming gradient, indices), batched as the input, on
        ``device``."""
        return self._upload_temporary(self.host_of(value))

    def _upload_temporary(self, array: np.ndarray) -> Tensor:
        """``upload_host`` into a buffer of the device's pool (docs/design.md, "Host round
        trips"), given back by ``recycle()``."""
        device = self.device
        desc = packed_desc(DataType.UINT16 if array.dtype == BFLOAT16_BITS else DataType.of(array.dtype), array.shape)
        t = device._temporary(desc)
        device._write(t._buffer, array, desc)
        self._temporaries.append(t)
        if array.dtype != BFLOAT16_BITS:
            return t
        return device.wrap(t.buffer, TensorDesc(DataType.BFLOAT16, t.sizes, t.desc.strides,
                                                t.desc.total_size_in_bytes), t.offset)

    def recycle(self) -> None:
        """Give the pooled buffers of ``tensor()`` and ``upload()`` back to the device's pool:
        only once every result was read back (that read-back waited for all the work on them),
        and nothing the caller gets refers to them."""
        temporaries, self._temporaries, self._x = self._temporaries, [], None
        if temporaries:
            self.device._recycle(temporaries)

    def upload_host(self, array: np.ndarray) -> Tensor:
        """A host array (BFLOAT16_BITS: a BFLOAT16 tensor) on ``device``."""
        t = self.device.upload(array)
        if array.dtype != BFLOAT16_BITS:
            return t
        return self.device.wrap(t.buffer, TensorDesc(DataType.BFLOAT16, t.sizes, t.desc.strides,
                                                     t.desc.total_size_in_bytes), t.offset)

    def give(self, value):
        """A batched result (a poolgpu Tensor, or a NumPy array made on the host) in the
        input's kind, without the batch dimension for an unbatched input; a torch result on
        the input's torch device, in its memory format."""
        if self.kind == "tensor":
            tensor = value if isinstance(value, Tensor) else self.upload_host(value)
            return _drop_leading(tensor) if self.unbatched else tensor
        array = host_values(value) if isinstance(value, Tensor) else value
        if self.unbatched:
            array = array[0]
        bfloat16 = array.dtype == BFLOAT16_BITS
        if self.kind == "numpy":
            return array.view(self.source.dtype) if bfloat16 else array   # (ml_dtypes.bfloat16 in, out)
        result = torch.from_numpy(array.view(np.int16)).view(torch.bfloat16) if bfloat16 else torch.from_numpy(array)
        return result.to(self.source.device).contiguous(memory_format=memory_format(self.source))

    def empty(self, sizes: tuple, dtype: np.dtype) -> torch.Tensor:
        """A torch result's shape, type, device and memory format, without its values (what a
        fake implementation returns)."""
        shape = sizes[1:] if self.unbatched else sizes
        torch_dtype = torch.bfloat16 if dtype == BFLOAT16_BITS else getattr(torch, np.dtype(dtype).name)
        return torch.empty(shape, dtype=torch_dtype, device=self.source.device, memory_format=memory_format(self.source))


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
        results = tuple(self.call.give(v) for v in values)
        # Results on the host were read back after every use of the call's uploads (the
        # read-back submits and waits for all work before it): their buffers go back to the
        # pool (none of the results refers to them).
        if self.call.kind != "tensor":
            self.call.recycle()
        return results

    def fake(self) -> tuple:
        """Empty torch results of the right shapes (a fake or meta implementation)."""
        return tuple(self.call.empty(sizes, dtype) for sizes, dtype in self.outputs)


def gradient_plan(plan: Plan, compute: Callable[[], tuple]) -> Plan:
    """The plan of a call's input gradient: of the input's shape and type, ``compute()``."""
    return Plan(plan.call, ((plan.call.sizes, plan.call.dtype),), compute)


# The device copies of torch inputs that require a gradient, kept for the backward, which
# reads the same input again: autograd hands the backward the very tensor the forward had.
# A copy serves while that tensor lives, on the same pg.Device, batched to the same sizes, and
# its version counter (which every in-place change of it moves) and memory are those uploaded;
# at most _KEPT_BYTES of them, the least recently used dropped first.
_KEPT: "OrderedDict[int, tuple]" = OrderedDict()  # id(torch tensor) -> (weak ref, version, data_ptr, Device, Tensor)
_KEPT_BYTES = 256 << 20
_kept_lock = threading.Lock()
_kept_dead = []  # (key, weak ref) of torch tensors that died, dropped from _KEPT under the lock


def _drop_dead() -> None:
    """Drop the entries of torch tensors that died (the caller holds ``_kept_lock``)."""
    while _kept_dead:
        key, ref = _kept_dead.pop()
        entry = _KEPT.get(key)
        if entry is not None and entry[0] is ref:
            del _KEPT[key]


def _kept_input(source: torch.Tensor, device: Device, sizes: tuple) -> Optional[Tensor]:
    with _kept_lock:
        _drop_dead()
        entry = _KEPT.get(id(source))
        if entry is None:
            return None
        ref, version, data_ptr, kept_on, kept = entry
        if (ref() is not source or version != source._version or data_ptr != source.data_ptr()
                or kept_on is not device or kept.sizes != sizes):
            return None
        _KEPT.move_to_end(id(source))
        return kept


def _keep_input(source: torch.Tensor, device: Device, kept: Tensor) -> None:
    key = id(source)

    def forget(ref, key=key):
        # When the torch tensor dies, on any thread, maybe while a thread holds the lock
        # (this one, even): never wait; the entry goes when the lock is next held.
        _kept_dead.append((key, ref))
        if _kept_lock.acquire(blocking=False):
            try:
                _drop_dead()
            finally:
                _kept_lock.release()

    entry = (weakref.ref(source, forget), source._version, source.data_ptr(), device, kept)
    with _kept_lock:
        _drop_dead()
        _KEPT[key] = entry
        _KEPT.move_to_end(key)
        total = sum(e[4].desc.total_size_in_bytes for e in _KEPT.values())
        while total > _KEPT_BYTES and _KEPT:
            _, dropped = _KEPT.popitem(last=False)
            total -= dropped[4].desc.total_size_in_bytes


def _leading_one(t: Tensor) -> Tensor:
    d = t.desc
    desc = TensorDesc(d.data_type, (1,) + d.sizes, (math.prod(d.sizes),) + d.strides, d.total_size_in_bytes)
    return t.device.wrap(t.buffer, desc, t.offset)


def _drop_leading(t: Tensor) -> Tensor:
    d = t.desc
    return t.device.wrap(t.buffer, TensorDesc(d.data_type, d.sizes[1:], d.strides[1:], d.total_size_in_bytes), t.offset)


def plane_indices(flat: Union[Tensor, np.ndarray], plane: int) -> np.ndarray:
    """poolgpu's flat indices over the whole tensor as PyTorch's int64 indices within each
    (n, c) plane (on the host: one pass)."""
    return as_host(flat).astype(np.int64) % plane

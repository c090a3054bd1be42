"""Tensor: a tensor in a GPU buffer of a Device."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import numpy as np
import numpy.typing as npt

from .dtypes import DataType
from .tensor_desc import TensorDesc

if TYPE_CHECKING:  # (device imports this module)
    import wgpu

    from .device import Device

__all__ = ["Tensor"]


class Tensor:
    """A tensor in a GPU buffer: ``desc`` says how its logical values sit from ``offset``.

    Made by ``Device.upload``, ``Device.empty``, ``Device.wrap`` and by ops; it stays on its
    device until read back (``t.numpy()``, ``np.asarray(t)``).

    Parameters
    ----------
    device : Device
        The device whose buffer holds it.
    desc : TensorDesc
        Its data type, sizes and strides.
    buffer : wgpu.GPUBuffer
        A buffer of ``device`` with STORAGE usage.
    offset : int, default 0
        Bytes from the buffer's start to element 0.
    """

    __slots__ = ("device", "desc", "_buffer", "offset", "_give_back", "__weakref__")

    def __init__(self, device: "Device", desc: TensorDesc, buffer: "wgpu.GPUBuffer", offset: int = 0) -> None:
        self.device = device
        self.desc = desc
        self._buffer = buffer
        self.offset = offset
        # For a buffer the Device made for this tensor alone (``upload``, ``empty``, op
        # results): the finaliser that gives it back to the Device's pool when the tensor is
        # freed (Device._own), unless the buffer is handed out (``buffer``) first.
        self._give_back = None

    def __copy__(self) -> "Tensor":
        """Another Tensor over the same bytes (so neither gives the buffer back when freed)."""
        return Tensor(self.device, self.desc, self.buffer, self.offset)

    @property
    def buffer(self) -> "wgpu.GPUBuffer":
        """The GPUBuffer holding the tensor (``offset`` bytes to element 0).

        Reading it hands the buffer out: from then on the Device never reuses it for another
        tensor, and it is freed with the last reference to it (docs/design.md, "Host round
        trips")."""
        self._keep_buffer()
        return self._buffer

    @buffer.setter
    def buffer(self, buffer: "wgpu.GPUBuffer") -> None:
        self._keep_buffer()
        self._buffer = buffer

    def _keep_buffer(self) -> None:
        """Never give the buffer back to the Device's pool."""
        if self._give_back is not None:
            self._give_back.detach()
            self._give_back = None

    @property
    def sizes(self) -> tuple:
        """The logical sizes ``{N, C, spatial...}``."""
        return self.desc.sizes

    @property
    def data_type(self) -> DataType:
        """The elements' DataType."""
        return self.desc.data_type

    # NumPy habits: ``t.shape``, ``t.dtype`` and ``np.asarray(t)`` (a read-back), as for arrays.

    @property
    def shape(self) -> tuple:
        """The sizes, as ``ndarray.shape`` names them."""
        return self.desc.sizes

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of the elements."""
        return self.desc.data_type.numpy

    def __array__(self, dtype: Optional[npt.DTypeLike] = None, copy: Optional[bool] = None) -> np.ndarray:
        """``np.asarray(t)``: the values read back (always a new array, so ``copy=False``
        cannot be honoured and raises, as NumPy 2 asks).

        Parameters
        ----------
        dtype : dtype, optional
            Convert to it; default None: the tensor's own.
        copy : bool, optional
            None or True; False raises ValueError.

        Returns
        -------
        numpy.ndarray
        """
        if copy is False:
            raise ValueError("a poolgpu Tensor lives on the GPU: reading it back always copies (use copy=None)")
        array = self.numpy()
        return array if dtype is None else array.astype(dtype, copy=False)

    def numpy(self) -> np.ndarray:
        """The logical values, as a new packed array of ``sizes`` (waits for the work that
        writes them, submitting the calling thread's open ``batch()`` first).

        Returns
        -------
        numpy.ndarray

        Raises
        ------
        RuntimeError
            Inside ``Device.recording_into()``.
        DeviceError
            The device is lost, or the values were not back within the Device's ``timeout``.
        """
        return self.device._read_tensors((self,))[0]

    def __repr__(self) -> str:
        return f"Tensor({self.desc.data_type.name}, sizes={self.sizes}, offset={self.offset})"

"""``torch.nn.functional``'s pooling functions and their poolgpu.torch forms: the one table
that :func:`functional` sends calls through and that :func:`poolgpu.torch.convert` reads
models' source for."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import torch
from torch.overrides import TorchFunctionMode

from ..device import Device
from . import adaptive, fractional, pooling, unpool
from ._call import checked_device

_FAMILIES = {pooling: ("max_pool", "avg_pool", "lp_pool"), adaptive: ("adaptive_max_pool", "adaptive_avg_pool"),
             unpool: ("max_unpool",), fractional: ("fractional_max_pool",)}


def _table() -> Dict[Any, Callable]:
    table = {}
    for module, families in _FAMILIES.items():
        for family in families:
            for d in (1, 2, 3):
                name = f"{family}{d}d"
                ours = getattr(module, name, None)
                if ours is None:  # (fractional pooling has no 1d form)
                    continue
                table[getattr(torch.nn.functional, name)] = ours
                # F.max_pool2d(..., return_indices=True) arrives as F.max_pool2d_with_indices,
                # its return_indices among the arguments
                with_indices = getattr(torch.nn.functional, f"{name}_with_indices", None)
                if with_indices is not None:
                    table[with_indices] = ours
    return table


#: torch.nn.functional's pooling function (its ``_with_indices`` form too) -> poolgpu.torch's.
POOLINGS: Dict[Any, Callable] = _table()


class _Functional(TorchFunctionMode):
    """Sends torch.nn.functional's pooling calls to poolgpu.torch's functions."""

    def __init__(self, device: Optional[Device]):
        super().__init__()
        self.device = device

    def __torch_function__(self, func, types, args=(), kwargs=None):
        # (inside, this mode is off: poolgpu.torch's own torch calls run as they are)
        ours = POOLINGS.get(func)
        if ours is None:
            return func(*args, **(kwargs or {}))
        return ours(*args, **(kwargs or {}), device=self.device)


def functional(device: Optional[Device] = None) -> TorchFunctionMode:
    """A context in which ``torch.nn.functional``'s pooling calls run on poolgpu, in any code.

    ``F.max_pool2d(x, 3)`` inside ``with pgt.functional():`` is ``pgt.max_pool2d(x, 3)``:
    every pooling function poolgpu.torch has (``max_pool*``, ``avg_pool*``, ``lp_pool*``,
    ``adaptive_*_pool*``, ``max_unpool*``, ``fractional_max_pool*``), called through
    ``torch.nn.functional`` by whatever code runs inside, e.g. a model's ``forward`` that
    :func:`convert` cannot reach.  A ``torch.overrides.TorchFunctionMode``: it sees calls
    made with torch tensors; other functions run unchanged.

    Parameters
    ----------
    device : pg.Device, optional
        Where the calls compute; None: ``pg.default_device()``.

    Returns
    -------
    torch.overrides.TorchFunctionMode
        A context manager (``with pgt.functional(): ...``).

    Raises
    ------
    pg.ValidationError
        ``device`` is not a pg.Device; inside, whatever poolgpu.torch's function raises (a
        float64 input, ...).
    """
    return _Functional(checked_device(device, "functional"))

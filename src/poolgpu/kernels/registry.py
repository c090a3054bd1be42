"""The registry: operator name (a description's ``kernel``) -> the function building its
Program.  Each family module registers its builders with :func:`register` when imported."""

from __future__ import annotations

from typing import Callable, Optional

from ..tuning import Tuning
from .chunking import chunked
from .core import Program

REGISTRY: dict = {}


def register(operator: str) -> Callable:
    """Decorator: ``builder(desc, tuning) -> Program`` builds the programs of ``operator``
    (a pure function of its arguments)."""

    def add(builder: Callable) -> Callable:
        if operator in REGISTRY:
            raise ValueError(f"a program builder for {operator!r} is registered already")
        REGISTRY[operator] = builder
        return builder

    return add


def program_for(desc, tuning: Optional[Tuning] = None, max_binding: Optional[int] = None) -> Program:
    """The program computing the (validated) description ``desc`` with the kernels
    ``tuning`` chooses (None: ``Tuning.for_cpu()``); with ``max_binding`` (bytes), chunked
    so that no dispatch binds more of a tensor (see :func:`chunked`).  A pure function of
    its arguments."""
    program = REGISTRY[desc.kernel](desc, Tuning.for_cpu() if tuning is None else tuning)
    if max_binding is None:
        return program
    tensors = dict(desc.input_tensors() + desc.output_tensors())
    return chunked(program, {role: t for role, t in tensors.items() if t is not None}, max_binding)

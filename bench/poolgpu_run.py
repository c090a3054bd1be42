"""A bench Problem set up for poolgpu on one device (the bench's rows, bench.ratios and
bench.variants time these)."""

from __future__ import annotations

import sys

import poolgpu as pg

from . import ROOT
from .timing import ROTATE

sys.path.insert(0, str(ROOT / "tests"))
from helpers import layout_strides  # noqa: E402


class PoolgpuRun:
    """A Problem set up on the device in one layout: tensors uploaded (laid out), operators
    compiled, outputs allocated; ``record()`` calls the operators through the public API."""

    def __init__(self, device, problem, layout: str):
        self.problem = problem
        named = "channels_last" if layout == "nhwc" else "packed"
        self._strides = lambda sizes: layout_strides(sizes, named)
        self.tensors = {
            name: device.upload(array, strides=None if name in problem.packed else self._strides(array.shape))
            for name, array in problem.inputs.items()
        }
        self.read_bytes = sum(t.desc.total_size_in_bytes for t in self.tensors.values())
        self.calls = []
        for step in problem.steps:
            desc = step.describe(_Descs(self, {name: t.desc for name, t in self.tensors.items()}))
            outputs = []
            for role, tensor_desc in desc.output_tensors():
                if tensor_desc is not None:
                    self.tensors[step.outputs[role]] = device.empty(tensor_desc)
                    outputs.append(step.outputs[role])
            inputs = [step.inputs[role] for role, _ in desc.input_tensors()]
            self.calls.append((device.compile(desc), inputs, outputs))
        self.written_bytes = sum(self.tensors[name].desc.total_size_in_bytes for name in problem.outputs)

    def record(self) -> None:
        for op, inputs, outputs in self.calls:
            op(*(self.tensors[name] for name in inputs), out=tuple(self.tensors[name] for name in outputs))

    def outputs(self) -> dict:
        return {name: self.tensors[name].numpy() for name in self.problem.outputs}


class _Descs(dict):
    """What a Step's ``describe`` sees: input TensorDescs by name, and ``new`` for outputs."""

    def __init__(self, run: PoolgpuRun, descs: dict):
        super().__init__(descs)
        self._run = run

    def new(self, data_type, sizes) -> pg.TensorDesc:
        return pg.TensorDesc(data_type, sizes, self._run._strides(tuple(sizes)))


def rotating_runs(device, problem, layout: str, first: PoolgpuRun = None) -> list:
    """ROTATE runs of ``problem``, each on its own tensors (``first``, where given, among
    them), for timing.interleaved's rotating copies."""
    runs = [first] if first is not None else []
    return runs + [PoolgpuRun(device, problem, layout) for _ in range(ROTATE - len(runs))]

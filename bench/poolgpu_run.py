"""A bench Problem set up for poolgpu on one device (the bench's rows, bench.ratios and
bench.variants time these)."""

from __future__ import annotations

import sys

import poolgpu as pg

from . import ROOT
from .timing import ROTATE

sys.path.insert(0, str(ROOT / "tests"))
from helpers import layout_strides  # noqa: E402


def _strides(layout: str):
    named = "channels_last" if layout == "nhwc" else "packed"
    return lambda sizes: layout_strides(sizes, named)


def _input_strides(problem, layout: str) -> dict:
    """Each input's strides in ``layout`` (None: packed, as ROI boxes stay)."""
    strides = _strides(layout)
    return {name: None if name in problem.packed else strides(array.shape) for name, array in problem.inputs.items()}


def descriptions(problem, layout: str) -> list:
    """(step, description) of each of ``problem``'s poolgpu calls in ``layout``: what a
    PoolgpuRun compiles, without a device (bench.variants compares kernels by them)."""
    strides = _strides(layout)
    descs = {name: pg.TensorDesc(array.dtype.name, array.shape, s)
             for (name, array), s in zip(problem.inputs.items(), _input_strides(problem, layout).values())}
    described = []
    for step in problem.steps:
        desc = step.describe(_Descs(descs, strides))
        described.append((step, desc))
        descs.update({step.outputs[role]: t for role, t in desc.output_tensors() if t is not None})
    return described


def upload_inputs(device, problem, layout: str) -> dict:
    """``problem``'s inputs on ``device``, laid out as ``layout`` (name -> Tensor)."""
    strides = _input_strides(problem, layout)
    return {name: device.upload(array, strides=strides[name]) for name, array in problem.inputs.items()}


class PoolgpuRun:
    """A Problem set up on the device in one layout: tensors uploaded (laid out; or
    ``inputs``, uploaded before and shared), operators compiled, outputs allocated;
    ``record()`` calls the operators through the public API."""

    def __init__(self, device, problem, layout: str, inputs: dict = None):
        self.problem = problem
        self.tensors = dict(inputs) if inputs is not None else upload_inputs(device, problem, layout)
        self.read_bytes = sum(t.desc.total_size_in_bytes for t in self.tensors.values())
        self.calls = []
        for step, desc in descriptions(problem, layout):
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

    def __init__(self, descs: dict, strides):
        super().__init__(descs)
        self._strides = strides

    def new(self, data_type, sizes) -> pg.TensorDesc:
        return pg.TensorDesc(data_type, sizes, self._strides(tuple(sizes)))


def rotating_runs(device, problem, layout: str, first: PoolgpuRun = None, input_sets: list = None) -> list:
    """ROTATE runs of ``problem``, each on its own tensors (``first``, where given, among
    them; ``input_sets``: ROTATE uploads of the inputs to share), for timing.interleaved's
    rotating copies."""
    runs = [first] if first is not None else []
    return runs + [PoolgpuRun(device, problem, layout, None if input_sets is None else input_sets[k])
                   for k in range(len(runs), ROTATE)]

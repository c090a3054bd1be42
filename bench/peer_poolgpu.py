"""poolgpu as a peer of itself: the bench's rows in a worker process (bench/peer_worker.py)
on the driver that process is pointed at.  bench/peers.py points it at the Mesa the
Dawn-based peers use (``poolgpu-mesa25``), so that poolgpu's ratios to them compare one
driver while the bench's own rows stay on the system's.

Timed as the bench times its rows on CPU adapters (GPU timestamps around one dispatch per
submission), with the copy roofline of that driver (``copy_seconds``); the bench checks the
outputs against the reference.  The worker rebuilds each row's operator from its spec
(bench/cases.py), the bench's inputs standing in for the case's own."""

from __future__ import annotations

import poolgpu as pg

from .cases import CASES, Data, build
from .peer_base import Prepared
from .poolgpu_run import PoolgpuRun
from .roofline import Roofline
from .timing import GpuTimer

NAME = "poolgpu-mesa25"
_opened = {}


def _device():
    if not _opened:
        device = pg.Device(backend="vulkan")
        timer = GpuTimer(device)
        _opened.update(device=device, timer=timer, roofline=Roofline(device, timer), sizes=None)
    return _opened


def version() -> str:
    device = _device()["device"]
    return f"{pg.__version__} on {device.name}, {device.info['description']}"


def _data(spec: dict, inputs: dict) -> Data:
    """The row's Data (tiny or not, repeated or not, as its input sizes say), holding the
    bench's inputs in place of its own: build() reads them through its memo."""
    case = CASES[spec["case"]]
    sizes = tuple(spec["x_sizes"])
    data = Data(case, spec["dtype"], sizes[1:] == tuple(case.tiny[1:]) and sizes != tuple(case.sizes), 0)
    if sizes[0] != data.sizes[0]:
        data = data.repeated(sizes[0] // data.sizes[0])
    if "x" in inputs:
        data.memo("x", lambda: inputs["x"])
    if "rois" in inputs and inputs["rois"].shape[-1] == 5:   # (ROI align's are corners, its batch apart)
        data.memo("rois", lambda: inputs["rois"].reshape(-1, 5))
    if "dy" in inputs:
        # (the regions' gradients, boxes_dy, drawn from the Data's generator: the worker's
        # draws would differ)
        shape = tuple(inputs["dy"].shape)
        for key in (("dy", shape), ("boxes_dy", shape, False), ("boxes_dy", shape, True)):
            data.memo(key, lambda: inputs["dy"])
    if "v" in inputs:
        data.memo(("max", None), lambda: (inputs["v"], inputs["idx"]))
    return data


class _Run(Prepared):
    def __init__(self, run: PoolgpuRun, opened: dict):
        self._run, self._timer = run, opened["timer"]
        self._copy, _ = opened["roofline"].for_bytes(run.read_bytes, run.written_bytes)

    def run(self) -> None:
        self._timer.seconds(self._run.record)

    def seconds(self) -> float:
        return self._timer.seconds(self._run.record)

    def copy_seconds(self) -> float:
        return self._timer.seconds(self._copy)

    def outputs(self) -> dict:
        return self._run.outputs()


def prepare(spec: dict, inputs: dict, layout: str, **_) -> Prepared:
    opened = _device()
    sizes = (spec["case"], spec["dtype"], tuple(spec["x_sizes"]))
    if opened["sizes"] != sizes:  # a new case: the previous one's copy buffers go
        opened["roofline"].clear()
        opened["sizes"] = sizes
    prepared = _Run(PoolgpuRun(opened["device"], build(spec["op"], _data(spec, inputs)), layout), opened)
    prepared.run()
    return prepared

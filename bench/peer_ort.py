"""ONNX Runtime as a peer: the CPU execution provider (in the bench's process) and the
WebGPU one (``onnxruntime-webgpu``, a different wheel of the same module, so it runs in a
worker process of its own virtual environment: see bench/peer_worker.py).

Models come ready-made (bench/onnx_models.py); ONNX tensors are NCHW only."""

from __future__ import annotations

import statistics
import time

import onnxruntime as ort

from .peer_base import Prepared, Unsupported

NAME = "onnxruntime"
PROVIDERS = {"cpu": "CPUExecutionProvider", "webgpu": "WebGpuExecutionProvider"}


def version() -> str:
    return ort.__version__


def providers() -> list:
    return ort.get_available_providers()


def _session(model: bytes, provider: str):
    options = ort.SessionOptions()
    options.log_severity_level = 3
    if provider != "CPUExecutionProvider":
        # A node the provider cannot run would silently fall back to the CPU and be timed there.
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    try:
        return ort.InferenceSession(model, options, providers=[provider])
    except Exception as exc:  # ORT raises its own exception types for unsupported nodes and types
        raise Unsupported(str(exc).strip().splitlines()[-1][:200]) from None


class _OnCpu(Prepared):
    def __init__(self, session, feeds, names):
        self._session, self._feeds, self._names = session, feeds, names
        self._last = None

    def run(self) -> None:
        self._last = self._session.run(None, self._feeds)

    def outputs(self) -> dict:
        return dict(zip(self._names, self._last))


class _OnDevice(Prepared):
    """Inputs placed on the device once (through an Identity model), outputs bound on the
    device.  ORT's Python API has no wait but a read-back, so one run is timed with the
    read-back of its outputs, less the median time of that read-back alone."""

    def __init__(self, session, upload, feeds, names, device):
        upload_binding = upload.io_binding()
        for name, array in feeds.items():
            upload_binding.bind_cpu_input(name, array)
        for output in upload.get_outputs():
            upload_binding.bind_output(output.name, device, 0)
        upload.run_with_iobinding(upload_binding)
        self._on_device = upload_binding.get_outputs()  # kept alive: the model's inputs
        self._binding = session.io_binding()
        for name, value in zip(feeds, self._on_device):
            self._binding.bind_ortvalue_input(name, value)
        for output in session.get_outputs():
            self._binding.bind_output(output.name, device, 0)
        self._session, self._names = session, names
        self.run()
        self._read_back = statistics.median(self._timed(self._binding.copy_outputs_to_cpu) for _ in range(3))

    @staticmethod
    def _timed(call) -> float:
        start = time.perf_counter()
        call()
        return time.perf_counter() - start

    def run(self) -> None:
        self._session.run_with_iobinding(self._binding)
        self._last = self._binding.copy_outputs_to_cpu()

    def seconds(self) -> float:
        return max(self._timed(self.run) - self._read_back, 0.0)

    def outputs(self) -> dict:
        return dict(zip(self._names, self._last))


def prepare(spec: dict, inputs: dict, layout: str, *, model: bytes, upload_model: bytes = None,
            provider: str = "cpu", outputs=(), **_) -> Prepared:
    if layout != "nchw":
        raise Unsupported("ONNX tensors are NCHW only")
    provider_name = PROVIDERS[provider]
    if provider_name not in ort.get_available_providers():
        raise Unsupported(f"this onnxruntime has no {provider_name}")
    session = _session(model, provider_name)
    try:
        if provider == "cpu":
            prepared = _OnCpu(session, inputs, outputs)
            prepared.run()
        else:
            prepared = _OnDevice(session, _session(upload_model, provider_name), inputs, outputs, provider)
    except Unsupported:
        raise
    except Exception as exc:
        raise Unsupported(str(exc).strip().splitlines()[-1][:200]) from None
    return prepared

"""The peers: what users would pick instead of poolgpu, each found if installed.

=============  =======================================  ===============================
peer           runs                                     where
=============  =======================================  ===============================
torch          PyTorch, CPU                             the bench's process
ort-cpu        ONNX Runtime, CPU execution provider     the bench's process
ort-webgpu     onnxruntime-webgpu, WebGPU provider      worker, its own venv (a second
                                                        wheel of the same module)
tinygrad       tinygrad, WEBGPU backend (Dawn)          worker, the bench's venv
torch-cuda     PyTorch eager on a CUDA device           worker, the bench's venv (in the
                                                        bench's process PyTorch slowed
                                                        poolgpu's kernels on a GPU 2-5x)
torch-cuda-    the same through torch.compile           worker, the bench's venv
compile
=============  =======================================  ===============================

A peer that is missing or cannot start is reported with the reason; one that cannot run a
case reports it unsupported.  Dawn (ORT WebGPU, tinygrad) needs Mesa >= 25 for lavapipe: where
the system's is older, their workers use the one scripts/mesa25.sh unpacks into .cache/mesa25
(``private_mesa``), and poolgpu stays on the system's; the ``poolgpu-mesa25`` peer then runs
poolgpu's rows on theirs too, so that the ratios to them compare one driver.

Workers are sent each input array once: they keep the last few (``Worker.HOLD``), and a
later row naming the same array sends its token (a case's rows share their inputs).
"""

from __future__ import annotations

import importlib.util
import os
import platform
import re
import select
import struct
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

import numpy as np

from . import ROOT
from .peer_base import Unsupported
from .peer_worker import receive_frame, send_frame

NAMES = ("torch", "ort-cpu", "ort-webgpu", "tinygrad", "torch-cuda", "torch-cuda-compile", "poolgpu-mesa25")
LABELS = {"torch": "PyTorch CPU", "ort-cpu": "ORT CPU", "ort-webgpu": "ORT WebGPU", "tinygrad": "tinygrad WEBGPU",
          "torch-cuda": "PyTorch CUDA", "torch-cuda-compile": "torch.compile CUDA",
          "poolgpu-mesa25": "poolgpu on Mesa 25"}
SAME_DRIVER = "poolgpu-mesa25"  # poolgpu on the Dawn peers' driver: their ratios to it compare one driver
ORT_WEBGPU_VENV = ROOT / ".venv-ort-webgpu"
MESA_DIR = ROOT / ".cache" / "mesa25"  # scripts/mesa25.sh
WORKER_TIMEOUT_S = 300.0


class WorkerError(Exception):
    pass


class Worker:
    """A peer module in a process of its own (bench/peer_worker.py); restarted after a crash."""

    HOLD = 4  # input arrays a worker keeps, most recently used first out

    def __init__(self, module: str, python: str, env: dict, log_path: Path):
        self.module, self.python, self.env, self.log_path = module, python, env, log_path
        self.process = None
        self.hello = None
        self.held = OrderedDict()  # token -> the array the worker holds (kept alive here: tokens stay unique)

    def start(self) -> dict:
        self.held.clear()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [self.python, str(ROOT / "bench" / "peer_worker.py"), self.module],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=self.env,
        )
        log.close()
        self.hello = self._reply()
        return self.hello

    def _reply(self) -> dict:
        ready, _, _ = select.select([self.process.stdout], [], [], WORKER_TIMEOUT_S)
        reply = receive_frame(self.process.stdout) if ready else None
        if reply is None:
            why = "timed out" if not ready else f"exited ({self.process.poll()})"
            self.stop()
            raise WorkerError(f"worker {why}: {self.log_tail()}")
        return reply

    def call(self, **request) -> dict:
        if self.process is None or self.process.poll() is not None:
            hello = self.start()
            if hello["status"] != "ok":
                raise WorkerError(hello["reason"])
        if request["command"] == "prepare":
            request = self._sending_once(request)
        try:
            send_frame(self.process.stdin, request)
        except (BrokenPipeError, struct.error) as exc:
            self.stop()
            raise WorkerError(f"worker gone: {exc}; {self.log_tail()}") from None
        return self._reply()

    def _sending_once(self, request: dict) -> dict:
        """``request`` with the input arrays the worker holds already replaced by their
        tokens, and what it is to hold after it (``keep``)."""
        inputs, tokens = {}, {}
        for name, array in (request["arguments"].get("inputs") or {}).items():
            if not isinstance(array, np.ndarray):
                inputs[name] = array
                continue
            token = (id(array), array.__array_interface__["data"][0], array.shape, array.dtype.str)
            if token in self.held:
                self.held.move_to_end(token)
                inputs[name] = {"cached": token}
            else:
                self.held[token] = inputs[name] = array
                tokens[name] = token
        while len(self.held) > self.HOLD:
            self.held.popitem(last=False)
        return dict(request, arguments=dict(request["arguments"], inputs=inputs), tokens=tokens, keep=list(self.held))

    def log_tail(self, lines: int = 3) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(line.strip() for line in text[-lines:])[-300:]

    def stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            self.process = None


class _Remote:
    """A prepared operator living in a worker."""

    def __init__(self, worker: Worker):
        self.worker = worker

    def _call(self, **request) -> dict:
        reply = self.worker.call(**request)
        if reply["status"] == "unsupported":
            raise Unsupported(reply["reason"])
        if reply["status"] != "ok":
            raise WorkerError(reply["reason"])
        return reply

    def seconds(self) -> float:
        return self._call(command="seconds")["seconds"]

    def copy_seconds(self) -> float:
        return self._call(command="copy_seconds")["seconds"]

    def outputs(self) -> dict:
        return self._call(command="outputs")["outputs"]

    def release(self) -> None:
        try:
            self.worker.call(command="release")
        except WorkerError:
            pass


class Peer:
    """``status`` is None when usable, else why not; ``prepare(problem, layout)`` returns an
    object with ``seconds()``, ``outputs()`` and ``release()``, or raises Unsupported."""

    def __init__(self, name: str):
        self.name, self.label = name, LABELS[name]
        self.status, self.version, self.worker = None, None, None
        self.driver = None  # the driver its worker was pointed at, where not the system's
        self.every_row = False  # runs on every row, not only --peer-rows'
        self.has_copy = False  # times a copy roofline of its own (prepared.copy_seconds)

    def describe(self) -> dict:
        described = {"label": self.label, "status": self.status or "available", "version": self.version}
        return dict(described, driver=self.driver) if self.driver else described

    def close(self) -> None:
        if self.worker is not None:
            self.worker.stop()

    def _start(self, worker: Worker, refused: str) -> dict | None:
        """Start ``worker`` as this peer's: its greeting, with its version kept, or None with
        ``status`` saying why not (``refused`` before the reason the worker gave)."""
        self.worker = worker
        try:
            hello = worker.start()
        except (OSError, WorkerError) as exc:
            self.status = f"cannot start: {exc}"
            return None
        if hello["status"] != "ok":
            self.status = refused + hello["reason"].removeprefix("RuntimeError: ")
            worker.stop()
            return None
        self.version = hello["version"]
        return hello

    def _remote(self, problem, layout, **arguments):
        remote = _Remote(self.worker)
        remote._call(command="prepare", arguments=dict(
            spec=problem.spec, inputs=arguments.pop("inputs", problem.inputs), layout=layout, **arguments))
        return remote


class TorchPeer(Peer):
    def __init__(self):
        super().__init__("torch")
        try:
            from . import peer_torch

            self._module, self.version = peer_torch, peer_torch.version()
        except ImportError as exc:
            self.status = f"not installed ({exc.name})"

    def prepare(self, problem, layout):
        return self._module.prepare(problem.spec, problem.inputs, layout)


def _onnx_for(problem):
    from . import onnx_models

    feeds = onnx_models.onnx_inputs(problem.inputs)
    return onnx_models, feeds, onnx_models.build(problem.spec, problem.inputs, problem.outputs)


class OrtCpuPeer(Peer):
    def __init__(self):
        super().__init__("ort-cpu")
        try:
            import onnx  # noqa: F401  (models are built with onnx.helper)

            from . import peer_ort

            self._module, self.version = peer_ort, peer_ort.version()
        except ImportError as exc:
            self.status = f"not installed ({exc.name})"

    def prepare(self, problem, layout):
        _, feeds, model = _onnx_for(problem)
        return self._module.prepare(problem.spec, feeds, layout, model=model, provider="cpu", outputs=problem.outputs)


class OrtWebGpuPeer(Peer):
    def __init__(self, python: str, log_dir: Path, dawn_problem: str, dawn_env: dict):
        super().__init__("ort-webgpu")
        if importlib.util.find_spec("onnx") is None:
            self.status = "not installed (onnx, to build the models)"
            return
        if not python:
            self.status = ("not installed: onnxruntime-webgpu lives in its own venv "
                           f"({ORT_WEBGPU_VENV.name}; bash scripts/bench.sh makes it)")
            return
        if dawn_problem:
            self.status = dawn_problem
            return
        self.driver = _private_driver(dawn_env)
        hello = self._start(Worker("peer_ort", python, dict(os.environ, **dawn_env), log_dir / "peer-ort-webgpu.log"),
                            "not installed: ")
        if hello is not None and "WebGpuExecutionProvider" not in hello.get("providers", ()):
            self.status = f"onnxruntime {self.version} has no WebGpuExecutionProvider"
            self.version = None
            self.worker.stop()

    def prepare(self, problem, layout):
        onnx_models, feeds, model = _onnx_for(problem)
        return self._remote(problem, layout, inputs=feeds, model=model, upload_model=onnx_models.identity(problem.inputs),
                            provider="webgpu", outputs=problem.outputs)


def _dawn_library():
    spec = importlib.util.find_spec("pydawn")
    if spec is None or not spec.submodule_search_locations:
        return None
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine().lower())
    suffix = {"win32": ".dll", "darwin": ".dylib"}.get(sys.platform, ".so")
    for path in sorted(Path(next(iter(spec.submodule_search_locations)), "lib").glob(f"libwebgpu_dawn*{suffix}")):
        if suffix == ".dll" or machine in path.name:
            return path
    return None


class TinygradPeer(Peer):
    def __init__(self, log_dir: Path, dawn_problem: str, dawn_env: dict):
        super().__init__("tinygrad")
        library = _dawn_library()
        if importlib.util.find_spec("tinygrad") is None:
            self.status = "not installed (tinygrad)"
        elif library is None:
            self.status = "not installed (dawn-python, tinygrad's WEBGPU runtime)"
        elif dawn_problem:
            self.status = dawn_problem
        else:
            env = dict(os.environ, DEV="WEBGPU", WEBGPU_PATH=str(library), **dawn_env)
            self.driver = _private_driver(dawn_env)
            self._start(Worker("peer_tinygrad", sys.executable, env, log_dir / "peer-tinygrad.log"), "cannot start: ")

    def prepare(self, problem, layout):
        return self._remote(problem, layout)


class TorchCudaPeer(Peer):
    """bench/peer_torch_cuda.py in a worker; unavailable, with the reason, without a CUDA device."""

    def __init__(self, log_dir: Path, compiled: bool):
        super().__init__("torch-cuda-compile" if compiled else "torch-cuda")
        self.every_row = True  # its data types and memory formats are poolgpu's
        if importlib.util.find_spec("torch") is None:
            self.status = "not installed (torch)"
            return
        env = dict(os.environ, POOLGPU_BENCH_TORCH_COMPILE="1" if compiled else "0")
        self._start(Worker("peer_torch_cuda", sys.executable, env, log_dir / f"peer-{self.name}.log"), "unavailable: ")

    def prepare(self, problem, layout):
        return self._remote(problem, layout)

    def prepare_clone(self, nbytes: int):
        """PyTorch's ``clone()`` of an ``nbytes`` tensor on the GPU (the ceiling, bench/ceiling.py)."""
        remote = _Remote(self.worker)
        remote._call(command="prepare", arguments=dict(spec={"op": "clone", "bytes": nbytes}, inputs={}, layout="nchw"))
        return remote


class PoolgpuMesaPeer(Peer):
    """poolgpu's rows on the Mesa the Dawn-based peers use (bench/peer_poolgpu.py in a worker
    pointed at it), with that driver's copy roofline: where those peers run on a private
    Mesa, their ratios to it compare one driver."""

    def __init__(self, log_dir: Path, dawn_env: dict):
        super().__init__(SAME_DRIVER)
        self.has_copy = True
        if not dawn_env:
            self.status = ("unavailable: needed only where the Dawn peers run on a private Mesa "
                           "(scripts/mesa25.sh, under an older system Mesa)")
            return
        self.driver = _private_driver(dawn_env)
        self._start(Worker("peer_poolgpu", sys.executable, dict(os.environ, **dawn_env),
                           log_dir / "peer-poolgpu-mesa25.log"), "cannot start: ")

    def prepare(self, problem, layout):
        return self._remote(problem, layout)


def private_mesa(directory: Path = None) -> dict:
    """The environment that points a worker at the Mesa scripts/mesa25.sh unpacked (its
    lavapipe ICD first, its libraries first), or {} where there is none."""
    directory = directory or MESA_DIR
    icd = directory / "lvp_icd.json"
    if not icd.is_file():
        return {}
    libraries = sorted({str(p.parent) for p in (directory / "root").rglob("libvulkan_lvp.so")})
    path = ":".join(libraries + [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p])
    version = (directory / "version").read_text().strip() if (directory / "version").is_file() else ""
    # VK_DRIVER_FILES is the loader's newer name for VK_ICD_FILENAMES
    return {"VK_ICD_FILENAMES": str(icd), "VK_DRIVER_FILES": str(icd), "LD_LIBRARY_PATH": path,
            "POOLGPU_BENCH_MESA": version}


def _private_driver(env: dict):
    return f"Mesa {env['POOLGPU_BENCH_MESA']} (lavapipe) from .cache/mesa25" if env else None


def dawn_problem(adapters: list, private: dict = None) -> str:
    """Why Dawn-based peers cannot run here, or "" (Dawn needs Mesa >= 25 for lavapipe;
    ``private``: the environment of private_mesa(), which gives them one)."""
    vulkan = [a for a in adapters if a["backend"] == "vulkan"]
    if not vulkan and sys.platform.startswith("linux") and not private:
        return "unavailable: no Vulkan adapter for Dawn"
    for adapter in vulkan:
        match = re.search(r"Mesa (\d+)\.(\d+)", adapter.get("description", ""))
        if match and int(match.group(1)) < 25 and not private:
            return (f"unavailable: Dawn needs Mesa >= 25 (found {match.group(0)}); "
                    "on Debian 12 bash scripts/bench.sh unpacks it for these peers (scripts/mesa25.sh)")
    return ""


def ort_webgpu_python(given: str = None) -> str:
    """The Python of onnxruntime-webgpu: --ort-webgpu-python, POOLGPU_BENCH_ORT_WEBGPU_PYTHON,
    the venv bench.sh makes, or this Python if its onnxruntime is the WebGPU build."""
    for candidate in (given, os.environ.get("POOLGPU_BENCH_ORT_WEBGPU_PYTHON"), ORT_WEBGPU_VENV / "bin" / "python"):
        if candidate and Path(candidate).exists():
            return str(candidate)
    try:
        import onnxruntime

        if "WebGpuExecutionProvider" in onnxruntime.get_available_providers():
            return sys.executable
    except ImportError:
        pass
    return ""


def discover(names, adapters: list, log_dir: Path, ort_webgpu: str = None) -> list:
    system_mesa = [re.search(r"Mesa (\d+)", a.get("description", "")) for a in adapters if a["backend"] == "vulkan"]
    old = any(m and int(m.group(1)) < 25 for m in system_mesa) or not system_mesa
    dawn_env = private_mesa() if old else {}  # the system's Mesa where it is new enough
    dawn = dawn_problem(adapters, dawn_env)
    made = {
        "torch": TorchPeer,
        "ort-cpu": OrtCpuPeer,
        "ort-webgpu": lambda: OrtWebGpuPeer(ort_webgpu_python(ort_webgpu), log_dir, dawn, dawn_env),
        "tinygrad": lambda: TinygradPeer(log_dir, dawn, dawn_env),
        "torch-cuda": lambda: TorchCudaPeer(log_dir, compiled=False),
        "torch-cuda-compile": lambda: TorchCudaPeer(log_dir, compiled=True),
        SAME_DRIVER: lambda: PoolgpuMesaPeer(log_dir, dawn_env),
    }
    return [made[name]() for name in names]

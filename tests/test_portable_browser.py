"""The browser example (examples/browser) in headless Chromium: the page runs its bundle on
Chromium's WebGPU (SwiftShader here; Tint compiles the WGSL), and its result is the bytes
poolgpu computes for the same pixels.  The test saves a screenshot of the page
(POOLGPU_SCREENSHOT: where; default the test's temporary directory).

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe: fds 3
and 4, JSON messages ended by NUL), so nothing but the standard library is needed."""

import base64
import functools
import http.server
import importlib.util
import json
import os
import select
import shutil
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import poolgpu as pg

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "browser"
# Headless Chromium with WebGPU on SwiftShader (a CPU Vulkan), and nothing that reaches out
# to the network.
CHROMIUM_FLAGS = (
    "--headless=new", "--no-sandbox", "--enable-unsafe-webgpu", "--enable-features=Vulkan",
    "--use-vulkan=swiftshader", "--use-webgpu-adapter=swiftshader", "--enable-unsafe-swiftshader",
    "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync",
    "--window-size=1000,640", "--hide-scrollbars",
)
PAGE_TIMEOUT = 180  # seconds; SwiftShader compiles the shaders on the CPU


def _make_bundle_module():
    spec = importlib.util.spec_from_file_location("make_bundle", EXAMPLE / "make_bundle.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def chromium() -> str:
    for name in (os.environ.get("POOLGPU_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    pytest.skip("no Chromium (scripts/test.sh installs Debian's chromium; POOLGPU_CHROMIUM names another)")


class DevTools:
    """Chromium with the DevTools protocol on a pipe."""

    def __init__(self, binary: str, profile: Path, log: Path):
        to_chromium, self._to = os.pipe()
        self._from, from_chromium = os.pipe()

        def pipes_as_3_and_4():
            os.dup2(to_chromium, 3)
            os.dup2(from_chromium, 4)

        self.log = log
        with open(log, "wb") as out:
            self.process = subprocess.Popen(
                [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, close_fds=False,
                preexec_fn=pipes_as_3_and_4)
        os.close(to_chromium)
        os.close(from_chromium)
        self._buffer, self._next = b"", 0
        self.console = []  # the page's console messages and exceptions

    def call(self, method: str, session: str = None, timeout: float = 30, **params):
        self._next += 1
        message = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive(timeout)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def wait_for(self, event: str, timeout: float = 30):
        while self._receive(timeout).get("method") != event:
            pass

    def _receive(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from], [], [], left)[0]:
                raise TimeoutError(f"Chromium did not answer within {timeout} s; its log: {self.log}")
            chunk = os.read(self._from, 1 << 20)
            if not chunk:
                raise RuntimeError(f"Chromium closed the pipe; its log:\n{self.log.read_text()[-3000:]}")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message = json.loads(raw)
        if message.get("method") == "Runtime.consoleAPICalled":
            self.console.append(" ".join(str(a.get("value", a.get("description", ""))) for a in message["params"]["args"]))
        elif message.get("method") == "Runtime.exceptionThrown":
            self.console.append(message["params"]["exceptionDetails"].get("exception", {}).get("description", ""))
        return message

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to)
        os.close(self._from)


@pytest.fixture(scope="module")
def server():
    """The repository over HTTP (the page imports ../../js/poolgpu.mjs), on a free port."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(ROOT)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def page_result(server, tmp_path_factory):
    """The page's run of its sample: (result, screenshot path)."""
    binary = chromium()
    directory = tmp_path_factory.mktemp("chromium")
    tools = DevTools(binary, directory / "profile", directory / "chromium.log")
    try:
        target = tools.call("Target.createTarget", url="about:blank")["targetId"]
        session = tools.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        tools.call("Runtime.enable", session)
        tools.call("Page.enable", session)
        tools.call("Page.navigate", session, url=f"{server}/examples/browser/index.html")
        tools.wait_for("Page.loadEventFired", timeout=60)
        evaluated = tools.call("Runtime.evaluate", session, timeout=PAGE_TIMEOUT, expression="window.poolgpuDemo",
                               awaitPromise=True, returnByValue=True)
        time.sleep(0.2)  # (the canvases are drawn; let the compositor show them)
        shot = tools.call("Page.captureScreenshot", session, format="png")["data"]
    finally:
        tools.close()
    screenshot = Path(os.environ.get("POOLGPU_SCREENSHOT", directory / "browser-example.png"))
    screenshot.write_bytes(base64.b64decode(shot))
    if "exceptionDetails" in evaluated:
        details = evaluated["exceptionDetails"]
        reason = details.get("exception", {}).get("description", details.get("text", ""))
        if "no WebGPU" in reason or "found no adapter" in reason:
            pytest.skip(f"Chromium offers no WebGPU here: {reason}")
        pytest.fail(f"the page failed: {reason}\nconsole: {tools.console}\nscreenshot: {screenshot}")
    return evaluated["result"]["value"], screenshot


def test_the_page_pools_its_sample_with_poolgpus_bytes(page_result, device):
    result, screenshot = page_result
    make = _make_bundle_module()
    desc = make.description()
    pixels = base64.b64decode(result["input"])
    assert len(pixels) == desc.input.total_size_in_bytes
    x = np.frombuffer(pixels, np.uint8).reshape(desc.input.sizes[2:] + (4,)).transpose(2, 0, 1)[None]
    assert x.std() > 10, "the page fed an empty image"
    op = pg.Op(device, desc, make.TUNING)
    y = op(device.upload(np.ascontiguousarray(x), strides=desc.input.strides))
    expected = bytes(device._read(y.buffer, y.offset, y.desc.total_size_in_bytes))
    assert base64.b64decode(result["output"]) == expected, f"the page's result differs from poolgpu's ({screenshot})"
    assert result["milliseconds"] > 0
    png = screenshot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_the_example_bundle_is_what_poolgpu_exports_now(tmp_path):
    make = _make_bundle_module()
    fresh = pg.export(make.description(), tmp_path / "bundle", tuning=make.TUNING)
    committed = EXAMPLE / "bundle"
    names = sorted(p.name for p in fresh.iterdir())
    stale = [n for n in names if not (committed / n).is_file() or (committed / n).read_bytes() != (fresh / n).read_bytes()]
    assert sorted(p.name for p in committed.iterdir()) == names and not stale, (
        f"examples/browser/bundle is out of date ({stale}): run python examples/browser/make_bundle.py")

"""Runs one peer module (``python bench/peer_worker.py peer_tinygrad``) in a process of its
own, possibly from another virtual environment, answering the bench over stdin/stdout.

Frames are an 8-byte little-endian length and a pickle.  Requests: ``prepare`` (the
module's ``prepare`` arguments), ``seconds`` (one timed run), ``copy_seconds`` (one timed
run of the copy roofline, for peers that have one), ``outputs``, ``release``.  Replies carry
``status`` "ok", "unsupported" or "error" and a ``reason``.  Everything the libraries print
goes to stderr, which the bench keeps in a log file.

Inputs are sent once: a ``prepare`` may name an input by the token of one sent before
(``{"cached": token}``), and its ``keep`` lists the tokens of the inputs to hold on to
(bench/peers.py's Worker decides, so both sides agree)."""

import importlib
import os
import pickle
import struct
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def receive_frame(stream):
    header = stream.read(8)
    if len(header) < 8:
        return None
    (size,) = struct.unpack("<Q", header)
    return pickle.loads(stream.read(size))


def send_frame(stream, message) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def main() -> None:
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the protocol owns the original stdout; library output goes to the log
    sys.stdout = sys.stderr
    requests = sys.stdin.buffer
    try:
        module = importlib.import_module(f"bench.{sys.argv[1]}")
        hello = {"status": "ok", "version": module.version()}
        if hasattr(module, "providers"):
            hello["providers"] = module.providers()
    except Exception as exc:
        send_frame(replies, {"status": "error", "reason": f"{type(exc).__name__}: {exc}"})
        return
    send_frame(replies, hello)
    from bench.peer_base import Unsupported

    prepared, held = None, {}
    while (request := receive_frame(requests)) is not None:
        command = request["command"]
        try:
            if command == "prepare":
                if prepared is not None:
                    prepared.release()
                prepared = None
                arguments = request["arguments"]
                inputs = arguments.get("inputs") or {}
                tokens = request.get("tokens", {})
                known = {**held, **{tokens[name]: a for name, a in inputs.items() if name in tokens}}
                arguments["inputs"] = {name: held[a["cached"]] if isinstance(a, dict) else a for name, a in inputs.items()}
                held = {token: known[token] for token in request.get("keep", ()) if token in known}
                prepared = module.prepare(**arguments)
                reply = {"status": "ok"}
            elif command == "seconds":
                reply = {"status": "ok", "seconds": prepared.seconds()}
            elif command == "copy_seconds":
                reply = {"status": "ok", "seconds": prepared.copy_seconds()}
            elif command == "outputs":
                reply = {"status": "ok", "outputs": prepared.outputs()}
            elif command == "release":
                if prepared is not None:
                    prepared.release()
                prepared = None
                reply = {"status": "ok"}
            else:
                reply = {"status": "error", "reason": f"unknown command {command!r}"}
        except Unsupported as exc:
            reply = {"status": "unsupported", "reason": str(exc)}
        except Exception as exc:
            traceback.print_exc()
            reply = {"status": "error", "reason": f"{type(exc).__name__}: {str(exc).strip()[:300]}"}
        send_frame(replies, reply)


if __name__ == "__main__":
    main()

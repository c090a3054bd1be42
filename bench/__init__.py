"""poolgpu's bench: every operator on the standard cases, against the device's copy
roofline and the libraries users would pick instead.  Run ``python -m bench --help`` (or
``bash scripts/bench.sh``).

Imports nothing heavy, so that the peer worker (bench/peer_worker.py) can use the peer
modules from another virtual environment."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

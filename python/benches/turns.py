"""Turns per second and p50 from Python, embedded (``Gate``) and served (``Client`` against
``warrant serve``), beside the Rust engine's own figure, in one run.

    python python/benches/turns.py [--turns N] [--rust]

Each figure is one client deciding N turns on a fresh SQLite store with a durable commit, the
acts of ``crates/warrant-engine/benches/turn.rs`` in rotation (a read that commits, a cancel and
an exchange that are held). With ``--rust`` the script also runs that benchmark
(``cargo bench -p warrant-engine --bench turn`` with WARRANT_BENCH_TURNS=N) and prints its
``sqlite durable turn, 1 client(s)`` line beside the Python ones. Build everything with the
release profile first (``maturin build --release``, ``cargo build --release -p warrant-cli``):
the dev profile is several times slower and says nothing about the engine.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python" / "tests"))

from conftest import RETAIL, Served  # noqa: E402
from warrant_gate import Client, Gate  # noqa: E402

USER = "yusuf_rossi_9620"
ACTS: list[dict[str, Any]] = [
    {"op": "get_order_details", "args": {"order_id": "#W4776164"}},
    {"op": "cancel_pending_order", "args": {"order_id": "#W4776164", "reason": "no longer needed"}},
    {
        "op": "exchange_delivered_order_items",
        "args": {
            "order_id": "#W2378156",
            "item_ids": ["1151293680"],
            "new_item_ids": ["7706410293"],
            "payment_method_id": "credit_card_9513926",
        },
    },
]


def requests(conversation: str, n: int) -> list[dict[str, Any]]:
    return [
        {
            "conversation": conversation,
            "turn": f"t{i}",
            "actor": USER,
            "at": "2026-11-29T15:00:00Z",
            "time_zone": "America/New_York",
            "locale": "en-US",
            "entries": [{"kind": "user", "text": "Exchange my keyboard for the clicky one, please."}],
            "acts": [ACTS[i % len(ACTS)]],
        }
        for i in range(n)
    ]


def measure(name: str, turn: Callable[[dict[str, Any]], Any], n: int) -> str:
    bodies = requests(f"bench-{name.split()[0]}-{os.getpid()}", n)
    latencies = []
    start = time.perf_counter()
    for body in bodies:
        t = time.perf_counter()
        turn(body)
        latencies.append(time.perf_counter() - t)
    wall = time.perf_counter() - start
    p50 = statistics.median(latencies) * 1e6
    return f"{name:<44} {n:>7} turns  {n / wall:>9.0f} /s  p50 {p50:>8.1f} µs"


def rust_figure(n: int) -> str:
    env = {**os.environ, "WARRANT_BENCH_TURNS": str(n)}
    done = subprocess.run(
        ["cargo", "bench", "--quiet", "--locked", "-p", "warrant-engine", "--bench", "turn"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("sqlite durable turn, 1 client")]
    if not lines:
        raise RuntimeError(f"the Rust benchmark printed no sqlite line:\n{done.stdout}")
    return "rust engine: " + lines[0]


def main() -> None:
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    os.environ.setdefault("WARRANT_BIN", str(target / "release" / "warrant"))
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--rust", action="store_true", help="run the Rust engine's benchmark too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        gate = Gate(RETAIL, f"sqlite:{pathlib.Path(folder) / 'embedded.sqlite'}")
        print(measure("python Gate (embedded), 1 client", gate.turn, args.turns), flush=True)
        served = Served(pathlib.Path(folder) / "tenants")
        try:
            with Client(served.url, served.key) as client:
                print(measure("python Client (warrant serve), 1 client", client.turn, args.turns), flush=True)
        finally:
            served.close()
    if args.rust:
        print(rust_figure(args.turns), flush=True)


if __name__ == "__main__":
    main()

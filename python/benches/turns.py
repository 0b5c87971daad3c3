"""Turns per second and p50, side by side in one run, on the same contract and requests:
embedded (``Gate``, ``AsyncGate``), served (``Client``, ``AsyncClient`` against ``warrant serve``),
the command line (a ``warrant turn`` process per turn, from the binary and from the wheel's
console script), and with ``--rust`` the Rust engine's own figure.

    python python/benches/turns.py [--turns N] [--cli-turns M] [--rust]

Each figure is one client deciding N turns (M for the command line, a process each) on a fresh
SQLite store with a durable commit, the acts of ``crates/warrant-engine/benches/turn.rs`` in
rotation (a read that commits, a cancel and an exchange that are held). The command line has no
batch path: each of its turns pays a process's start and a contract's load. With ``--rust`` the script also runs that benchmark
(``cargo bench -p warrant-engine --bench turn`` with WARRANT_BENCH_TURNS=N) and prints its
``sqlite durable turn, 1 client(s)`` line beside the Python ones. Build everything with the
release profile first (``maturin build --release``, ``cargo build --release -p warrant-cli``):
the dev profile is several times slower and says nothing about the engine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Awaitable, Callable

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python" / "tests"))

from conftest import RETAIL, Served  # noqa: E402
from warrant_gate import AsyncClient, AsyncGate, Client, Gate  # noqa: E402

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


def line(name: str, n: int, wall: float, latencies: list[float]) -> str:
    p50 = statistics.median(latencies) * 1e6
    return f"{name:<44} {n:>7} turns  {n / wall:>9.0f} /s  p50 {p50:>9.1f} µs"


def measure(name: str, turn: Callable[[dict[str, Any]], Any], n: int) -> str:
    bodies = requests(f"bench-{name.split()[1]}-{os.getpid()}", n)
    latencies = []
    start = time.perf_counter()
    for body in bodies:
        t = time.perf_counter()
        turn(body)
        latencies.append(time.perf_counter() - t)
    return line(name, n, time.perf_counter() - start, latencies)


async def measure_async(name: str, turn: Callable[[dict[str, Any]], Awaitable[Any]], n: int) -> str:
    """`measure` of an awaited turn: one client awaiting one turn at a time on the loop."""
    bodies = requests(f"bench-{name.split()[1]}-{os.getpid()}", n)
    latencies = []
    start = time.perf_counter()
    for body in bodies:
        t = time.perf_counter()
        await turn(body)
        latencies.append(time.perf_counter() - t)
    return line(name, n, time.perf_counter() - start, latencies)


def cli_turn(program: pathlib.Path, store: str) -> Callable[[dict[str, Any]], Any]:
    """A turn as a `warrant turn` process of `program`, the request on its standard input."""

    def turn(body: dict[str, Any]) -> Any:
        done = subprocess.run(
            [str(program), "turn", "--contract", str(RETAIL), "--store", store],
            input=json.dumps(body), capture_output=True, text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{program} turn: status {done.returncode}: {done.stderr}")
        return json.loads(done.stdout)

    return turn


async def async_figures(folder: pathlib.Path, served: Served, n: int) -> list[str]:
    async with AsyncGate(RETAIL, f"sqlite:{folder / 'async.sqlite'}") as gate:
        lines = [await measure_async("python AsyncGate (embedded), 1 client", gate.turn, n)]
    async with AsyncClient(served.url, served.key) as client:
        lines.append(await measure_async("python AsyncClient (warrant serve), 1 client", client.turn, n))
    return lines


def figures(folder: pathlib.Path, n: int, cli_n: int) -> None:
    """Prints each figure as it is measured, every client on a store of its own."""
    with Gate(RETAIL, f"sqlite:{folder / 'embedded.sqlite'}") as gate:
        print(measure("python Gate (embedded), 1 client", gate.turn, n), flush=True)
    served = Served(folder / "tenants")
    try:
        with Client(served.url, served.key) as client:
            print(measure("python Client (warrant serve), 1 client", client.turn, n), flush=True)
        for figure in asyncio.run(async_figures(folder, served, n)):
            print(figure, flush=True)
    finally:
        served.close()
    binary = pathlib.Path(os.environ["WARRANT_BIN"])
    print(measure("cli warrant turn (binary), a process a turn", cli_turn(binary, f"sqlite:{folder / 'cli.sqlite'}"), cli_n), flush=True)
    script = pathlib.Path(sys.executable).parent / "warrant"
    if not script.is_file():
        raise RuntimeError(f"{script} is missing: install the wheel, whose console script it is")
    store = f"sqlite:{folder / 'script.sqlite'}"
    print(measure("cli warrant turn (console script), a process", cli_turn(script, store), cli_n), flush=True)


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
    parser.add_argument("--cli-turns", type=int, default=200, help="turns of each command-line figure")
    parser.add_argument("--rust", action="store_true", help="run the Rust engine's benchmark too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        figures(pathlib.Path(folder), args.turns, args.cli_turns)
    if args.rust:
        print(rust_figure(args.turns), flush=True)


if __name__ == "__main__":
    main()

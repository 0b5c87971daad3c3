"""python/benches/turns.py run once as a smoke test of itself: every figure printed, none
asserted (the test build is the dev profile, and this machine is shared)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import ROOT, warrant_binary

FIGURES = [
    "python Gate (embedded)",
    "python Client (warrant serve)",
    "python AsyncGate (embedded)",
    "python AsyncClient (warrant serve)",
    "cli warrant turn (binary)",
    "cli warrant turn (console script)",
]


def test_the_benchmark_prints_every_figure_side_by_side() -> None:
    env = {**os.environ, "WARRANT_BIN": str(warrant_binary())}
    done = subprocess.run(
        [sys.executable, str(ROOT / "python" / "benches" / "turns.py"), "--turns", "6", "--cli-turns", "3"],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(FIGURES), done.stdout
    for figure, printed in zip(FIGURES, lines):
        assert printed.startswith(figure), printed
        counted = re.search(r" (\d+) turns +(\d+) /s +p50 +[\d.]+ µs$", printed)
        assert counted is not None, printed
        assert int(counted.group(1)) == (3 if figure.startswith("cli") else 6)

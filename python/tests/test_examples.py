"""The adapters' examples run as scripts, offline, and say what happened."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT


def run(script: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "python" / script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_openai_agents_example_cancels_after_approval() -> None:
    pytest.importorskip("agents")
    lines = run("openai_agents_support.py")
    assert "call_cancel: hold confirmation_required" in lines
    assert "call_cancel: commit" in lines
    assert lines[-1] == "agent: Your order #W6247578 is cancelled."


def test_the_langgraph_example_refuses_the_unknown_order_and_cancels_the_other() -> None:
    pytest.importorskip("langgraph")
    lines = run("langgraph_support.py")
    assert "tool result call_unknown: warrant refused this call: unknown_record (args.order_id)" in lines
    assert "tool result call_mine: #W6247578 is cancelled (ordered by mistake)" in lines
    assert sum(line.startswith("call_mine: effect ") for line in lines) == 1

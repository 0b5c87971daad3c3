"""Exactly once through the adapters: a call the record shows committed, its outcome recorded,
never runs the tool again; it is answered with its first run's result, kept with the outcome.
The OpenAI Agents SDK: one saved run state resumed three times, then in a fresh process (another
clock), and after a process that died inside the approved tool; LangGraph: the interrupted
checkpoint resumed three times, and the node run again by a fresh process. One run each."""

from __future__ import annotations

import pathlib
import subprocess
import sys
from typing import Any

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ORDER = "#W6247578"


def step(*args: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HERE / "agents_resume.py"), *map(str, args)], capture_output=True, text=True, timeout=300
    )


def runs(ran: pathlib.Path) -> list[str]:
    return ran.read_text().splitlines() if ran.exists() else []


@pytest.fixture
def saved(tmp_path: pathlib.Path) -> tuple[str, pathlib.Path, pathlib.Path]:
    pytest.importorskip("agents")
    store, state, ran = f"sqlite:{tmp_path / 'w.sqlite'}", tmp_path / "state.json", tmp_path / "ran.txt"
    done = step("first", "--store", store, "--state", state, "--ran", ran)
    assert done.returncode == 0, done.stderr
    assert "interruptions ['c3']" in done.stdout
    assert runs(ran) == [f"get {ORDER}"]
    return store, state, ran


def test_a_saved_agents_state_resumed_three_times_and_after_a_restart_runs_the_tool_once(
    saved: tuple[str, pathlib.Path, pathlib.Path],
) -> None:
    store, state, ran = saved
    answers = []
    # Three resumes, each a fresh process with its own clock, then one more after them.
    for at in ["2026-12-01T09:30:00Z", "2026-12-02T10:00:00Z", "2026-12-03T11:00:00Z", "2027-01-01T00:00:00Z"]:
        done = step("resume", "--store", store, "--state", state, "--ran", ran, "--at", at)
        assert done.returncode == 0, done.stderr
        assert "final done" in done.stdout, done.stdout
        answers.append([line for line in done.stdout.splitlines() if line.startswith("c3 ")][0])
    assert runs(ran) == [f"get {ORDER}", f"cancel {ORDER}"], "the cancellation ran once"
    assert answers == [f"c3 cancelled {ORDER} (no longer needed)"] * 4, "each resume saw the first run's result"


def test_an_approval_interrupted_inside_the_tool_runs_it_once_when_resumed(
    saved: tuple[str, pathlib.Path, pathlib.Path],
) -> None:
    store, state, ran = saved
    died = step("resume", "--store", store, "--state", state, "--ran", ran, "--die-in-tool")
    assert died.returncode == 17, (died.returncode, died.stderr)
    assert runs(ran) == [f"get {ORDER}"]
    for _ in range(3):
        done = step("resume", "--store", store, "--state", state, "--ran", ran)
        assert done.returncode == 0, done.stderr
        assert f"c3 cancelled {ORDER} (no longer needed)" in done.stdout
    assert runs(ran) == [f"get {ORDER}", f"cancel {ORDER}"]


def test_a_langgraph_interrupt_resumed_three_times_runs_each_tool_once(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("langgraph")
    from langchain_core.messages import ToolMessage
    from langgraph.types import Command

    from test_langgraph import graph

    ran: list[str] = []
    log: list[str] = []
    app = graph(tmp_path, ran, log)
    config = {"configurable": {"thread_id": "t1"}}
    app.invoke({"messages": [("user", "Cancel both.")]}, config)
    interrupted = app.get_state(config)
    assert interrupted.next == ("tools",)
    results = []
    for _ in range(3):
        # Each resume starts again from the interrupted checkpoint, as a saved state does.
        done = app.invoke(Command(resume={"c3": {"approved": True}, "c4": {"approved": False}}), interrupted.config)
        results.append({m.tool_call_id: m.content for m in done["messages"] if isinstance(m, ToolMessage)})
    assert ran == [f"get {ORDER}", f"cancel {ORDER}"], ran
    assert all(r["c3"] == f"cancelled {ORDER}" for r in results), results
    assert all(r["c1"] == results[0]["c1"] for r in results), results


LANGGRAPH_AGAIN = """
import json, sys
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from warrant_gate import Gate, example
from warrant_gate.calls import Session
from warrant_gate.langgraph import gated_tool_node
from test_langgraph import call
@tool
def get_order_details(order_id: str) -> str:
    \"\"\"Looks an order up.\"\"\"
    with open(sys.argv[3], "a") as out:
        out.write(order_id + "\\n")
    return "details of " + order_id
with Gate(example(), sys.argv[1]) as gate:
    session = Session.restore(gate, json.loads(sys.argv[2]))
    node = gated_tool_node([get_order_details], session)
    message = AIMessage(content="", tool_calls=[call("get_order_details", {"order_id": "%s"}, "c9")])
    out = node({"messages": [message]})
print(json.dumps(out["messages"][0].content))
""" % ORDER


def test_a_langgraph_node_run_again_in_fresh_processes_runs_the_tool_once(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("langgraph")
    import json

    from warrant_gate import Gate, example
    from warrant_gate.calls import Session

    store, ran = f"sqlite:{tmp_path / 'w.sqlite'}", tmp_path / "ran.txt"
    with Gate(example(), store) as gate:
        saved = Session(gate, "conv-9", "yusuf_rossi_9620", [{"kind": "user", "text": "Look it up."}]).saved()
    seen = []
    for _ in range(3):
        # A fresh process each time (a restart after the node ran), the session restored.
        done = subprocess.run(
            [sys.executable, "-c", LANGGRAPH_AGAIN, store, json.dumps(saved), ran],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=HERE,
        )
        assert done.returncode == 0, done.stderr
        seen.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert runs(ran) == [ORDER], "the tool ran in the first process only"
    assert seen == [f"details of {ORDER}"] * 3, seen

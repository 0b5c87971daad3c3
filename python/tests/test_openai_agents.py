"""The OpenAI Agents SDK adapter with a scripted model (no network): a commit runs the tool and
reports its outcome, a refusal is the tool result the model sees, a hold is the SDK's approval,
answered through the gate, also across a run state saved as JSON."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, FunctionTool, Runner, function_tool, set_tracing_disabled  # noqa: E402
from agents.run_state import RunState  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from conftest import RETAIL  # noqa: E402
from warrant_gate import Gate  # noqa: E402
from warrant_gate.calls import Session  # noqa: E402
from warrant_gate.openai_agents import approve, gate_agent, reject  # noqa: E402

set_tracing_disabled(True)
ORDER = "#W6247578"


def tools(ran: list[str]) -> list[FunctionTool]:
    @function_tool
    def get_order_details(order_id: str) -> str:
        """Looks an order up."""
        ran.append(f"get {order_id}")
        return json.dumps({"order_id": order_id, "status": "pending"})

    @function_tool
    def cancel_pending_order(order_id: str, reason: str) -> str:
        """Cancels a pending order."""
        ran.append(f"cancel {order_id}")
        return f"cancelled {order_id}"

    return [get_order_details, cancel_pending_order]


def script() -> ScriptedModel:
    return ScriptedModel(
        [
            [
                function_call("get_order_details", {"order_id": ORDER}, call_id="c1"),
                function_call("cancel_pending_order", {"order_id": "#W0000000", "reason": "no longer needed"}, call_id="c2"),
                function_call("cancel_pending_order", {"order_id": ORDER, "reason": "no longer needed"}, call_id="c3"),
            ],
            [assistant_message("done")],
        ]
    )


def outputs(model: ScriptedModel) -> dict[str, Any]:
    """The tool results the model was sent on its last call, by call id."""
    return {
        item["call_id"]: item["output"]
        for item in model.calls[-1].input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    }


def first_run(tmp_path: Any) -> tuple[Session, ScriptedModel, list[str], list[str], Any, Any]:
    gate = Gate(RETAIL, f"sqlite:{tmp_path / 'w.sqlite'}")
    log: list[str] = []
    session = Session(gate, "conv-1", "yusuf_rossi_9620", [{"kind": "user", "text": "Cancel my order."}], log=log.append)
    model, ran = script(), []
    agent = gate_agent(Agent(name="support", instructions="Help.", model=model, tools=tools(ran)), session)
    result = asyncio.run(Runner.run(agent, "Cancel my order."))
    # The read committed and ran in the first run; only the held cancellation waits.
    assert ran == [f"get {ORDER}"]
    assert [(i.name, i.call_id) for i in result.interruptions] == [("cancel_pending_order", "c3")]
    return session, model, ran, log, agent, result


def test_a_held_call_runs_once_the_user_approves_across_a_saved_state(tmp_path: Any) -> None:
    session, model, ran, log, _, result = first_run(tmp_path)
    saved = result.to_state().to_json()
    # Resumed elsewhere: a fresh agent, a fresh wrapper, the state read back from JSON.
    fresh = gate_agent(Agent(name="support", instructions="Help.", model=model, tools=tools(ran)), session)
    state = asyncio.run(RunState.from_json(fresh, saved))
    for item in state.get_interruptions():
        approve(state, item)
    final = asyncio.run(Runner.run(fresh, state))
    assert final.final_output == "done"
    assert ran == [f"get {ORDER}", f"cancel {ORDER}"]
    seen = outputs(model)
    assert seen["c2"].startswith("warrant refused this call: unknown_record")
    assert seen["c3"] == f"cancelled {ORDER}"
    assert any(line.startswith("c3: commit") for line in log), log
    effects = [line for line in log if " effect " in line]
    assert [line.split(":")[0] for line in effects] == ["c1", "c3"]
    assert all(line.endswith(" done") for line in effects)
    model.assert_complete()


def test_a_held_call_the_user_rejects_never_runs_and_the_gate_records_it(tmp_path: Any) -> None:
    session, model, ran, log, agent, result = first_run(tmp_path)
    state = result.to_state()
    for item in state.get_interruptions():
        declined = reject(state, item, session)
        assert declined.verdict == "refuse"
        assert "declined_by_user" in declined.reasons()
    final = asyncio.run(Runner.run(agent, state))
    assert final.final_output == "done"
    assert ran == [f"get {ORDER}"]
    assert outputs(model)["c3"].startswith("the user declined this call")
    assert not any(line.startswith("c3: effect") for line in log)

"""One process of the OpenAI Agents SDK exactly-once test: the first run (which stops at the
held cancellation and saves its state), or a resume of that saved state in a fresh process,
with a fresh Session whose clock says another time. Each tool run appends a line to the
`--ran` file, so runs in every process are counted together.

    agents_resume.py first  --store S --state F --ran R
    agents_resume.py resume --store S --state F --ran R [--die-in-tool]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
from typing import Any

from agents import Agent, FunctionTool, Runner, function_tool, set_tracing_disabled
from agents.run_state import RunState
from agents.testing import ScriptedModel, assistant_message, function_call

from warrant_gate import Gate, example
from warrant_gate.calls import Session
from warrant_gate.openai_agents import approve, gate_agent, run_context

set_tracing_disabled(True)
ORDER = "#W6247578"


def tools(ran: pathlib.Path, die: bool) -> list[FunctionTool]:
    @function_tool
    def get_order_details(order_id: str) -> str:
        """Looks an order up."""
        with ran.open("a") as out:
            out.write(f"get {order_id}\n")
        return json.dumps({"order_id": order_id, "status": "pending"})

    @function_tool
    def cancel_pending_order(order_id: str, reason: str) -> str:
        """Cancels a pending order."""
        if die:
            # The process ends after the gate committed the approved call, before the effect.
            os._exit(17)
        with ran.open("a") as out:
            out.write(f"cancel {order_id}\n")
        return f"cancelled {order_id} ({reason})"

    return [get_order_details, cancel_pending_order]


def agent(model: ScriptedModel, session: Session, ran: pathlib.Path, die: bool = False) -> Agent[Any]:
    return gate_agent(Agent(name="support", instructions="Help.", model=model, tools=tools(ran, die)), session)


def session(gate: Gate, at: str) -> Session:
    return Session(gate, "conv-1", "yusuf_rossi_9620", [{"kind": "user", "text": "Cancel my order."}], at=at)


async def first(gate: Gate, state: pathlib.Path, ran: pathlib.Path) -> None:
    model = ScriptedModel(
        [
            [
                function_call("get_order_details", {"order_id": ORDER}, call_id="c1"),
                function_call("cancel_pending_order", {"order_id": ORDER, "reason": "no longer needed"}, call_id="c3"),
            ],
            [assistant_message("done")],
        ]
    )
    here = session(gate, "2026-11-29T15:00:00Z")
    result = await Runner.run(agent(model, here, ran), "Cancel my order.", context=run_context(here))
    print("interruptions", [i.call_id for i in result.interruptions])
    state.write_text(json.dumps(result.to_state().to_json()))


async def resume(gate: Gate, state: pathlib.Path, ran: pathlib.Path, die: bool, at: str) -> None:
    # Another process, another clock: the identity and time come from the saved state.
    model = ScriptedModel([[assistant_message("done")]])
    fresh = agent(model, session(gate, at), ran, die)
    restored = await RunState.from_json(fresh, json.loads(state.read_text()))
    for item in restored.get_interruptions():
        approve(restored, item)
    final = await Runner.run(fresh, restored)
    outputs = {
        item["call_id"]: item["output"]
        for item in model.calls[-1].input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    }
    print("final", final.final_output)
    print("c3", outputs.get("c3"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("step", choices=["first", "resume"])
    parser.add_argument("--store", required=True)
    parser.add_argument("--state", type=pathlib.Path, required=True)
    parser.add_argument("--ran", type=pathlib.Path, required=True)
    parser.add_argument("--die-in-tool", action="store_true")
    parser.add_argument("--at", default="2026-12-01T09:30:00Z")
    args = parser.parse_args()
    with Gate(example(), args.store) as gate:
        if args.step == "first":
            asyncio.run(first(gate, args.state, args.ran))
        else:
            asyncio.run(resume(gate, args.state, args.ran, args.die_in_tool, args.at))


if __name__ == "__main__":
    main()

"""An OpenAI Agents SDK agent whose tools go through warrant, run offline with a scripted model.

    python examples/python/openai_agents_support.py

The model asks to look an order up and to cancel it; the lookup runs at once, the cancellation
is held, the user (here: this script) approves it, and the resumed run cancels the order and
reports the outcome to the gate. Swap the ScriptedModel for a real model to talk to one.
"""

from __future__ import annotations

import asyncio
import pathlib
import tempfile

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from warrant_gate import Gate
from warrant_gate.calls import Session
from warrant_gate.openai_agents import approve, gate_agent

RETAIL = pathlib.Path(__file__).resolve().parents[1] / "retail" / "contract.toml"


@function_tool
def get_order_details(order_id: str) -> str:
    """The order's status and items."""
    return f"{order_id}: pending, 2 items"


@function_tool
def cancel_pending_order(order_id: str, reason: str) -> str:
    """Cancels a pending order in the shop's system."""
    return f"{order_id} is cancelled ({reason})"


async def main() -> None:
    set_tracing_disabled(True)
    store = f"sqlite:{tempfile.mkdtemp()}/warrant.sqlite"
    words = "I no longer need order #W6247578, please cancel it."
    session = Session(Gate(RETAIL, store), "demo", "yusuf_rossi_9620", [{"kind": "user", "text": words}], log=print)
    model = ScriptedModel(
        [
            [
                function_call("get_order_details", {"order_id": "#W6247578"}, call_id="call_look"),
                function_call(
                    "cancel_pending_order", {"order_id": "#W6247578", "reason": "no longer needed"}, call_id="call_cancel"
                ),
            ],
            [assistant_message("Your order #W6247578 is cancelled.")],
        ]
    )
    agent = gate_agent(Agent(name="support", model=model, tools=[get_order_details, cancel_pending_order]), session)
    result = await Runner.run(agent, words)
    state = result.to_state()
    for item in result.interruptions:
        print(f"the user is asked to approve {item.name} {item.arguments}: yes")
        approve(state, item)
    result = await Runner.run(agent, state)
    print("agent:", result.final_output)


if __name__ == "__main__":
    asyncio.run(main())

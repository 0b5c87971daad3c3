"""A LangGraph agent whose tool node goes through warrant, run offline with a scripted model.

    python examples/python/langgraph_support.py

The model asks to cancel two orders, one of them not the customer's; the gate refuses that one,
holds the other, the graph stops once for the user's answer, and on resume the approved call
runs and its outcome is reported. Swap the scripted chat model for a real one to talk to it.
"""

from __future__ import annotations

import pathlib
import tempfile
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition
from langgraph.types import Command

from warrant_gate import Gate
from warrant_gate.calls import Session
from warrant_gate.langgraph import gated_tool_node

RETAIL = pathlib.Path(__file__).resolve().parents[1] / "retail" / "contract.toml"


@tool
def cancel_pending_order(order_id: str, reason: str) -> str:
    """Cancels a pending order in the shop's system."""
    return f"{order_id} is cancelled ({reason})"


class Scripted(FakeMessagesListChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> "Scripted":
        return self


def main() -> None:
    store = f"sqlite:{tempfile.mkdtemp()}/warrant.sqlite"
    words = "Cancel #W6247578 and #W0000000, I ordered them by mistake."
    session = Session(Gate(RETAIL, store), "demo", "yusuf_rossi_9620", [{"kind": "user", "text": words}], log=print)
    calls = [
        {"name": "cancel_pending_order", "args": {"order_id": o, "reason": "ordered by mistake"}, "id": i, "type": "tool_call"}
        for o, i in [("#W6247578", "call_mine"), ("#W0000000", "call_unknown")]
    ]
    model = Scripted(responses=[AIMessage(content="", tool_calls=calls), AIMessage(content="One order is cancelled.")])
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", gated_tool_node([cancel_pending_order], session))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    app = graph.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "demo"}}
    stopped = app.invoke({"messages": [("user", words)]}, config)
    holds = stopped["__interrupt__"][0].value["holds"]
    for hold in holds:
        print(f"the user is asked to approve {hold['tool']} {hold['args']}: yes")
    done = app.invoke(Command(resume={h["call_id"]: {"approved": True} for h in holds}), config)
    for message in done["messages"]:
        if isinstance(message, ToolMessage):
            print(f"tool result {message.tool_call_id}: {message.content}")
    print("agent:", done["messages"][-1].content)


if __name__ == "__main__":
    main()

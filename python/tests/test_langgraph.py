"""The LangGraph adapter with a scripted chat model (no network): every call decided before
anything runs, one interrupt for the holds, each tool run exactly once after the resume."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import START, MessagesState, StateGraph  # noqa: E402
from langgraph.prebuilt import tools_condition  # noqa: E402
from langgraph.types import Command  # noqa: E402

from conftest import RETAIL  # noqa: E402
from warrant_gate import Gate  # noqa: E402
from warrant_gate.calls import Session  # noqa: E402
from warrant_gate.langgraph import gated_tool_node  # noqa: E402

ORDER, OTHER = "#W6247578", "#W0000000"


class ScriptedChat(FakeMessagesListChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedChat":
        return self


def call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def graph(tmp_path: Any, ran: list[str], log: list[str]) -> Any:
    @tool
    def get_order_details(order_id: str) -> str:
        """Looks an order up."""
        ran.append(f"get {order_id}")
        return json.dumps({"order_id": order_id})

    @tool
    def cancel_pending_order(order_id: str, reason: str) -> str:
        """Cancels a pending order."""
        ran.append(f"cancel {order_id}")
        return f"cancelled {order_id}"

    @tool
    def modify_user_address(user_id: str) -> str:
        """Not called in this test."""
        ran.append("address")
        return "changed"

    model = ScriptedChat(
        responses=[
            AIMessage(
                content="",
                tool_calls=[
                    call("get_order_details", {"order_id": ORDER}, "c1"),
                    call("cancel_pending_order", {"order_id": OTHER, "reason": "no longer needed"}, "c2"),
                    call("cancel_pending_order", {"order_id": ORDER, "reason": "no longer needed"}, "c3"),
                    call("cancel_pending_order", {"order_id": "#W4776164", "reason": "ordered by mistake"}, "c4"),
                ],
            ),
            AIMessage(content="done"),
        ]
    )
    gate = Gate(RETAIL, f"sqlite:{tmp_path / 'w.sqlite'}")
    session = Session(gate, "conv-1", "yusuf_rossi_9620", [{"kind": "user", "text": "Cancel both."}], log=log.append)
    tools = [get_order_details, cancel_pending_order, modify_user_address]
    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_node("tools", gated_tool_node(tools, session))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=InMemorySaver())


def test_holds_interrupt_once_and_every_tool_runs_exactly_once(tmp_path: Any) -> None:
    ran: list[str] = []
    log: list[str] = []
    app = graph(tmp_path, ran, log)
    config = {"configurable": {"thread_id": "t1"}}
    stopped = app.invoke({"messages": [("user", "Cancel both.")]}, config)
    holds = stopped["__interrupt__"][0].value["holds"]
    assert [h["call_id"] for h in holds] == ["c3", "c4"]
    assert ran == [], "nothing runs before the user has answered"
    assert app.get_state(config).next == ("tools",)
    done = app.invoke(Command(resume={"c3": {"approved": True}, "c4": {"approved": False}}), config)
    assert "__interrupt__" not in done
    assert ran == [f"get {ORDER}", f"cancel {ORDER}"]
    results = {m.tool_call_id: m for m in done["messages"] if isinstance(m, ToolMessage)}
    assert results["c2"].status == "error"
    assert results["c2"].content.startswith("warrant refused this call: unknown_record")
    assert results["c3"].content == f"cancelled {ORDER}"
    assert results["c4"].content.startswith("the user declined this call")
    assert "declined_by_user" in results["c4"].content
    assert done["messages"][-1].content == "done"
    # The node ran twice (before the interrupt and on resume); the second time every verdict
    # came from the store.
    assert sum("(again, from the store)" in line for line in log if line.startswith("c1:")) == 1
    assert [line.split(":")[0] for line in log if " effect " in line] == ["c1", "c3"]

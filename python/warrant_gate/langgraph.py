"""LangGraph (1.x): a tool node whose every call goes through the gate.

``gated_tool_node(tools, session)`` is a node for a ``MessagesState`` graph, in place of
``ToolNode``. It decides every call of the last AI message first, then, if any is held, stops
the graph once with ``interrupt({"holds": [...]})`` before anything has run; resume it with
``Command(resume={call_id: {"approved": bool}, ...})``. LangGraph runs an interrupted node again
from its top on resume, which is why nothing runs before the interrupt and why each call's turn
is keyed by its id: deciding it again is answered from the store. Then a commit runs the tool
and reports its outcome, a refusal or a question becomes the ``ToolMessage`` the model sees,
and a held call runs only if the user approved it (the gate is told either way).

The graph needs a checkpointer (``InMemorySaver`` or a durable one) for the interrupt.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.types import interrupt

from .calls import Decision, Session


def _declined(call: dict[str, Any], text: str) -> ToolMessage:
    return ToolMessage(text, tool_call_id=call["id"], name=call["name"], status="error")


def _run(tool: BaseTool, call: dict[str, Any], decision: Decision, session: Session) -> ToolMessage:
    try:
        message = tool.invoke(call)
    except Exception:
        session.report(decision, "failed")
        raise
    failed = isinstance(message, ToolMessage) and message.status == "error"
    session.report(decision, "failed" if failed else "done")
    return message


def gated_tool_node(tools: Sequence[BaseTool], session: Session) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A graph node that runs the last AI message's tool calls through the gate."""
    by_name = {t.name: t for t in tools}

    def node(state: dict[str, Any]) -> dict[str, Any]:
        calls = state["messages"][-1].tool_calls
        decisions = {c["id"]: session.decide(c["id"], c["name"], c["args"]) for c in calls}
        holds = [
            {"call_id": c["id"], "tool": c["name"], "args": c["args"]}
            for c in calls
            if decisions[c["id"]].verdict == "hold"
        ]
        answers = interrupt({"holds": holds}) if holds else {}
        out = []
        for call in calls:
            decision = decisions[call["id"]]
            if decision.verdict == "hold":
                approved = bool((answers.get(call["id"]) or {}).get("approved"))
                decision = session.answer(call["id"], call["name"], call["args"], "confirm" if approved else "decline")
                if not approved:
                    out.append(_declined(call, f"the user declined this call ({decision.reasons()})"))
                    continue
            if decision.verdict != "commit" or call["name"] not in by_name:
                out.append(_declined(call, decision.for_model()))
                continue
            out.append(_run(by_name[call["name"]], call, decision, session))
        return {"messages": out}

    return node

"""LangGraph (1.x): a tool node whose every call goes through the gate.

``gated_tool_node(tools, session)`` is a node for a ``MessagesState`` graph, in place of
``ToolNode``. It decides every call of the last AI message first, then, if any is held, stops
the graph once with ``interrupt({"holds": [...]})`` before anything has run; resume it with
``Command(resume={call_id: {"approved": bool}, ...})``. LangGraph runs an interrupted node again
from its top on resume, which is why nothing runs before the interrupt and why each call's turn
is keyed by its id: deciding it again is answered from the store. Then a commit runs the tool
and reports its outcome with the tool's message, a refusal or a question becomes the
``ToolMessage`` the model sees, and a held call runs only if the user approved it (the gate is
told either way). A committed call whose outcome is recorded (the node run again after a
crash, the graph resumed in another process) is answered with its first run's message and never
runs the tool again. Where the AI message keeps the model's own argument text (OpenAI's
``additional_kwargs["tool_calls"]``), that text is what the gate reads, as strictly as the CLI.

The graph needs a checkpointer (``InMemorySaver`` or a durable one) for the interrupt. Resumed
in another process, the node needs the same session: ``Session.restore(gate, saved)`` with what
``session.saved()`` gave, kept beside the thread.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.types import interrupt

from ._errors import RequestError
from .calls import Decision, Session


def _declined(call: dict[str, Any], text: str) -> ToolMessage:
    return ToolMessage(text, tool_call_id=call["id"], name=call["name"], status="error")


def _raw_arguments(message: Any) -> dict[str, str]:
    """The model's own argument text of each call, by id, where the message keeps it."""
    raw: dict[str, str] = {}
    for call in (getattr(message, "additional_kwargs", None) or {}).get("tool_calls") or []:
        arguments = (call.get("function") or {}).get("arguments") if isinstance(call, dict) else None
        if isinstance(call, dict) and isinstance(call.get("id"), str) and isinstance(arguments, str):
            raw[call["id"]] = arguments
    return raw


def _run(tool: BaseTool, call: dict[str, Any], decision: Decision, session: Session) -> ToolMessage:
    try:
        message = tool.invoke(call)
    except Exception:
        session.report(decision, "failed")
        raise
    failed = isinstance(message, ToolMessage) and message.status == "error"
    content = message.content if isinstance(message, ToolMessage) else str(message)
    kept = {"content": content, "status": "error" if failed else "success"}
    session.report(decision, "failed" if failed else "done", kept)
    return message if isinstance(message, ToolMessage) else ToolMessage(content, tool_call_id=call["id"], name=call["name"])


def _from_record(call: dict[str, Any], recorded: dict[str, Any]) -> ToolMessage:
    """The message of a call that ran before: its first run's, as kept with the outcome."""
    kept = recorded.get("result")
    if isinstance(kept, dict) and "content" in kept:
        status = "error" if kept.get("status") == "error" else "success"
        return ToolMessage(kept["content"], tool_call_id=call["id"], name=call["name"], status=status)
    text = f"this call ran before ({recorded.get('outcome')}); warrant does not run it again"
    return ToolMessage(text, tool_call_id=call["id"], name=call["name"])


def gated_tool_node(tools: Sequence[BaseTool], session: Session) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A graph node that runs the last AI message's tool calls through the gate."""
    by_name = {t.name: t for t in tools}

    def decide(call: dict[str, Any], raw: Optional[str]) -> Decision:
        if raw is not None:
            return session.decide_json(call["id"], call["name"], raw)
        return session.decide(call["id"], call["name"], call["args"])

    def node(state: dict[str, Any]) -> dict[str, Any]:
        message = state["messages"][-1]
        calls = message.tool_calls
        raw = _raw_arguments(message)
        decisions: dict[str, Decision] = {}
        refused: dict[str, RequestError] = {}
        for c in calls:
            try:
                decisions[c["id"]] = decide(c, raw.get(c["id"]))
            except RequestError as error:
                refused[c["id"]] = error
        holds = [
            {"call_id": c["id"], "tool": c["name"], "args": c["args"]}
            for c in calls
            if c["id"] in decisions and decisions[c["id"]].verdict == "hold"
        ]
        answers = interrupt({"holds": holds}) if holds else {}
        out = []
        for call in calls:
            if call["id"] in refused:
                error = refused[call["id"]]
                out.append(_declined(call, f"warrant refused this call: {error.code} ({error.field}): {error.message}"))
                continue
            decision = decisions[call["id"]]
            if decision.verdict == "hold":
                approved = bool((answers.get(call["id"]) or {}).get("approved"))
                decision = session.answer_held(decision, "confirm" if approved else "decline")
                if not approved:
                    out.append(_declined(call, f"the user declined this call ({decision.reasons()})"))
                    continue
            if decision.verdict != "commit" or call["name"] not in by_name:
                out.append(_declined(call, decision.for_model()))
                continue
            recorded = session.recorded(decision)
            if recorded is not None:
                out.append(_from_record(call, recorded))
                continue
            out.append(_run(by_name[call["name"]], call, decision, session))
        return {"messages": out}

    return node

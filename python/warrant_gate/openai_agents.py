"""The OpenAI Agents SDK (``openai-agents`` 0.8 or later): every tool call through the gate.

``gate_agent(agent, session)`` gives a copy of the agent whose function tools each ask the gate
before they run. A commit runs the tool and reports its outcome with the tool's result; a
refusal or a question is the tool result the model sees; a hold becomes the SDK's approval: the
run stops with ``result.interruptions``, and the user's answer goes to the gate through
``approve`` or ``reject`` here, then ``Runner.run(agent, state)`` resumes.

Exactly once: the gate keeps each call's verdict under its call id, and each run's result with
its outcome, so a call found committed again whose outcome is recorded (a run state resumed a
second time, or in another process) is answered with its first run's result and never runs the
tool again. Run with ``context=run_context(session)`` (or any dict context holding it): the
session's identity and time then travel in the saved state (``RunState.to_json()``), so the
resumed calls are the same requests wherever they are resumed. The model's arguments are read
from its JSON text as strictly as the CLI reads a request (a repeated key is refused).
"""

from __future__ import annotations

import json
from typing import Any, MutableMapping

from agents import Agent, FunctionTool, RunContextWrapper
from agents.run_state import RunState
from agents.tool_context import ToolContext

from ._errors import RequestError
from .calls import Decision, Session

# Where the session's identity is kept in a run's dict context.
CONTEXT_KEY = "warrant_session"


def run_context(session: Session, context: Any = None) -> dict[str, Any]:
    """A dict context for ``Runner.run`` holding the session's identity (beside ``context``'s
    own entries, if it is a dict), saved with the run state."""
    own = dict(context) if isinstance(context, dict) else {}
    return {**own, CONTEXT_KEY: session.saved()}


def _session(ctx: RunContextWrapper[Any], session: Session) -> Session:
    """The session the run's context saved (the first run's identity and time), else ``session``."""
    context = ctx.context
    if isinstance(context, MutableMapping):
        saved = context.get(CONTEXT_KEY)
        if saved is None:
            context[CONTEXT_KEY] = session.saved()
        elif saved != session.saved():
            return Session.restore(session.gate, saved, session.log)
    return session


def _answered(recorded: dict[str, Any]) -> Any:
    """What the model is told for a call that ran before: its first run's result."""
    if recorded.get("outcome") == "done" and "result" in recorded:
        return recorded["result"]
    return f"this call ran before ({recorded.get('outcome')}); warrant does not run it again"


def gated(tool: FunctionTool, session: Session) -> FunctionTool:
    """``tool`` with the gate in front of it."""

    async def needs_approval(ctx: RunContextWrapper[Any], params: dict[str, Any], call_id: str) -> bool:
        return _session(ctx, session).decide(call_id, tool.name, params).verdict == "hold"

    async def on_invoke(ctx: ToolContext[Any], args_json: str) -> Any:
        current = _session(ctx, session)
        call_id = ctx.tool_call_id
        try:
            if ctx.is_tool_approved(tool.name, call_id):
                decision = current.answer_json(call_id, tool.name, args_json, "confirm")
            else:
                decision = current.decide_json(call_id, tool.name, args_json)
        except RequestError as refused:
            _withdraw(current, call_id, tool.name, args_json)
            return f"warrant refused this call: {refused.code} ({refused.field}): {refused.message}"
        if decision.verdict != "commit":
            return decision.for_model()
        recorded = current.recorded(decision)
        if recorded is not None:
            return _answered(recorded)
        return await _run(tool, ctx, args_json, decision, current)

    return FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=tool.params_json_schema,
        on_invoke_tool=on_invoke,
        strict_json_schema=tool.strict_json_schema,
        needs_approval=needs_approval,
    )


def _withdraw(session: Session, call_id: str, tool: str, args_json: str) -> None:
    """The SDK asked ``needs_approval`` with the arguments it parsed (the last of a repeated key
    kept); the text itself is refused, so what that decided is undone: a commit reported
    failed (its changes reverted), a hold declined."""
    try:
        params = json.loads(args_json or "{}")
    except ValueError:
        return
    if not isinstance(params, dict):
        return
    try:
        decision = session.decide(call_id, tool, params)
    except RequestError:
        return
    if decision.verdict == "commit" and session.recorded(decision) is None:
        session.report(decision, "failed")
    elif decision.verdict == "hold":
        session.answer(call_id, tool, params, "decline")


async def _run(tool: FunctionTool, ctx: ToolContext[Any], args_json: str, decision: Decision, session: Session) -> Any:
    try:
        result = await tool.on_invoke_tool(ctx, args_json)
    except Exception:
        session.report(decision, "failed")
        raise
    session.report(decision, "done", result)
    return result


def gate_agent(agent: Agent[Any], session: Session) -> Agent[Any]:
    """A copy of ``agent`` whose function tools all go through the gate."""
    tools = [gated(t, session) if isinstance(t, FunctionTool) else t for t in agent.tools]
    return agent.clone(tools=tools)


def approve(state: RunState[Any], item: Any) -> None:
    """The user confirmed a held call: the gate is told when the resumed run invokes the tool."""
    state.approve(item)


def reject(state: RunState[Any], item: Any, session: Session) -> Decision:
    """The user declined a held call: the gate records it, and the model is told so."""
    args = item.arguments
    current = _session(state._context, session) if state._context is not None else session
    decision = current.answer(item.call_id, item.name, json.loads(args) if isinstance(args, str) else args, "decline")
    state.reject(item, rejection_message=f"the user declined this call ({decision.reasons()})")
    return decision

"""The OpenAI Agents SDK (``openai-agents`` 0.8 or later): every tool call through the gate.

``gate_agent(agent, session)`` gives a copy of the agent whose function tools each ask the gate
before they run. A commit runs the tool and reports its outcome; a refusal or a question is
the tool result the model sees; a hold becomes the SDK's approval: the run stops with
``result.interruptions``, and the user's answer goes to the gate through ``approve`` or
``reject`` here, then ``Runner.run(agent, state)`` resumes. The gate keeps each call's verdict
under its call id, so a run resumed from ``RunState.to_json()`` in another process decides
nothing twice.
"""

from __future__ import annotations

import json
from typing import Any

from agents import Agent, FunctionTool, RunContextWrapper
from agents.run_state import RunState
from agents.tool_context import ToolContext

from .calls import Decision, Session


def gated(tool: FunctionTool, session: Session) -> FunctionTool:
    """``tool`` with the gate in front of it."""

    async def needs_approval(_ctx: RunContextWrapper[Any], params: dict[str, Any], call_id: str) -> bool:
        return session.decide(call_id, tool.name, params).verdict == "hold"

    async def on_invoke(ctx: ToolContext[Any], args_json: str) -> Any:
        args = json.loads(args_json or "{}")
        call_id = ctx.tool_call_id
        if ctx.is_tool_approved(tool.name, call_id):
            decision = session.answer(call_id, tool.name, args, "confirm")
        else:
            decision = session.decide(call_id, tool.name, args)
        if decision.verdict != "commit":
            return decision.for_model()
        return await _run(tool, ctx, args_json, decision, session)

    return FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=tool.params_json_schema,
        on_invoke_tool=on_invoke,
        strict_json_schema=tool.strict_json_schema,
        needs_approval=needs_approval,
    )


async def _run(tool: FunctionTool, ctx: ToolContext[Any], args_json: str, decision: Decision, session: Session) -> Any:
    try:
        result = await tool.on_invoke_tool(ctx, args_json)
    except Exception:
        session.report(decision, "failed")
        raise
    session.report(decision, "done")
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
    decision = session.answer(item.call_id, item.name, json.loads(args) if isinstance(args, str) else args, "decline")
    state.reject(item, rejection_message=f"the user declined this call ({decision.reasons()})")
    return decision

"""Tool calls through the gate: what the framework adapters share.

A tool call is one act, decided in a turn of its own whose key is the call's id, so deciding a
call again (a framework that re-runs a node, a run resumed from saved state) is answered from
the store and does nothing twice. A held call is answered by the user in a second turn
(``confirm`` or ``decline``); a committed call's effect is run by the caller and its outcome
reported.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol


class GateLike(Protocol):
    """What the adapters need of a gate: ``Gate`` and ``Client`` both have it."""

    def turn(self, request: dict[str, Any]) -> dict[str, Any]: ...

    def effect_outcome(
        self, effect: str, outcome: str, rows: Optional[list[dict[str, Any]]] = None
    ) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Decision:
    """The gate's verdict on one tool call, with the response it came in."""

    call_id: str
    verdict: str
    response: dict[str, Any]

    @property
    def act(self) -> dict[str, Any]:
        return self.response["acts"][0]

    @property
    def effect(self) -> Optional[dict[str, Any]]:
        """The effect a committed call may run (its id and idempotency key), else None."""
        effects = self.response.get("effects") or []
        return effects[0] if effects else None

    @property
    def interaction(self) -> Optional[dict[str, Any]]:
        """The confirmation a held call waits for, else None."""
        interactions = self.response.get("interactions") or []
        return interactions[0] if interactions else None

    def reasons(self) -> str:
        """The reasons as one line: `code (field)`, `code [policy]`."""
        parts = []
        for reason in self.act.get("reasons", []):
            text = reason["code"]
            if reason.get("field"):
                text += f" ({reason['field']})"
            if reason.get("policies"):
                text += f" [{', '.join(reason['policies'])}]"
            parts.append(text)
        return "; ".join(parts)

    def for_model(self) -> str:
        """What the model is told instead of the tool's result when the call does not run."""
        if self.verdict == "refuse":
            return f"warrant refused this call: {self.reasons() or 'no reason given'}"
        if self.verdict == "ask":
            return f"warrant needs the user's words first; ask them: {self.reasons()}"
        if self.verdict == "hold":
            return "warrant holds this call until the user confirms it"
        return f"warrant: {self.verdict} {self.reasons()}".rstrip()


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


@dataclass
class Session:
    """The conversation tool calls are decided in: who the user is and what they said.

    ``entries`` are the turn's entries (the user's message pointers point into); ``at`` is the
    turn's time, fixed when the session is made, so that a call decided again is the same
    request and is answered from the store.
    """

    gate: GateLike
    conversation: str
    actor: str
    entries: list[dict[str, Any]] = field(default_factory=list)
    locale: str = "en-US"
    time_zone: str = "UTC"
    at: str = field(default_factory=_now)
    log: Optional[Callable[[str], None]] = None

    def _request(self, turn: str) -> dict[str, Any]:
        return {
            "conversation": self.conversation,
            "turn": turn,
            "actor": self.actor,
            "at": self.at,
            "time_zone": self.time_zone,
            "locale": self.locale,
        }

    def _decided(self, call_id: str, response: dict[str, Any]) -> Decision:
        decision = Decision(call_id, response["acts"][0]["verdict"], response)
        if self.log:
            again = " (again, from the store)" if response.get("repeated") else ""
            self.log(f"{call_id}: {decision.verdict}{again} {decision.reasons()}".rstrip())
        return decision

    def decide(self, call_id: str, tool: str, args: dict[str, Any]) -> Decision:
        """The verdict on a call, in the turn keyed by its id (idempotent)."""
        request = {**self._request(call_id), "entries": self.entries, "acts": [{"op": tool, "args": args}]}
        return self._decided(call_id, self.gate.turn(request))

    def answer(self, call_id: str, tool: str, args: dict[str, Any], option: str) -> Decision:
        """The user's answer (``confirm`` or ``decline``) to a held call, once per call."""
        held = self.decide(call_id, tool, args)
        if held.verdict != "hold" or held.interaction is None:
            return held
        answer = {"interaction": held.interaction["id"], "option": option}
        return self._decided(call_id, self.gate.turn({**self._request(f"{call_id}:{option}"), "answers": [answer]}))

    def report(self, decision: Decision, outcome: str) -> Optional[dict[str, Any]]:
        """Reports what running a committed call's effect did: done, failed or unknown."""
        effect = decision.effect
        if effect is None:
            return None
        reported = self.gate.effect_outcome(effect["id"], outcome)
        if self.log:
            self.log(f"{decision.call_id}: effect {effect['id']} {outcome}")
        return reported

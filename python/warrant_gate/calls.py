"""Tool calls through the gate: what the framework adapters share.

A tool call is one act, decided in a turn of its own whose key is the call's id, so deciding a
call again (a framework that re-runs a node, a run resumed from saved state) is answered from
the store and does nothing twice. A held call is answered by the user in a second turn
(``confirm`` or ``decline``); a committed call's effect is run by the caller and its outcome
reported, with what the run returned (``result``), so that a call found committed again, its
outcome recorded, is answered with that result and never run twice.

A call decided again must be the same request: the session's identity and time (``at``) are
fixed when it is made, and ``saved()`` / ``Session.restore(gate, saved)`` carry them to another
process; the OpenAI Agents SDK adapter keeps them in the run's context, so that a run state
saved with ``to_json()`` carries them itself.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Protocol

from ._errors import WarrantError
from ._native import MAX_RESULT, check_json, wire_json


class GateLike(Protocol):
    """What the adapters need of a gate: ``Gate`` and ``Client`` both have it."""

    def turn(self, request: Mapping[str, Any]) -> dict[str, Any]: ...

    def turn_json(self, text: str) -> dict[str, Any]: ...

    def effect_outcome(
        self, effect: str, outcome: str, rows: Optional[list[dict[str, Any]]] = None, *, result: Any = None
    ) -> dict[str, Any]: ...

    def effect(self, effect: str) -> Optional[dict[str, Any]]: ...


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

    def saved(self) -> dict[str, Any]:
        """What makes this session's requests: kept beside a saved run, given to ``restore``."""
        return {
            "conversation": self.conversation,
            "actor": self.actor,
            "entries": self.entries,
            "locale": self.locale,
            "time_zone": self.time_zone,
            "at": self.at,
        }

    @classmethod
    def restore(
        cls, gate: GateLike, saved: Mapping[str, Any], log: Optional[Callable[[str], None]] = None
    ) -> "Session":
        """The session ``saved()`` gave, over ``gate``: its calls are the same requests."""
        return cls(gate=gate, log=log, **{k: saved[k] for k in _SAVED})

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

    def decide_json(self, call_id: str, tool: str, args_json: str) -> Decision:
        """``decide`` with the arguments as the model wrote them, JSON text read as strictly as
        the CLI reads a request: a repeated key, U+0000 or anything but one object is refused
        (``RequestError``, ``invalid_input``, naming ``acts[0].args...``)."""
        args = check_json(args_json or "{}", "acts[0].args")
        head = json.dumps({**self._request(call_id), "entries": self.entries}, ensure_ascii=False)
        op = json.dumps(tool, ensure_ascii=False)
        return self._decided(call_id, self.gate.turn_json(f'{head[:-1]}, "acts": [{{"op": {op}, "args": {args}}}]}}'))

    def recorded(self, decision: Decision) -> Optional[dict[str, Any]]:
        """The committed call's effect as recorded once its outcome is (``outcome``, ``result``),
        else None: a call whose outcome is recorded has run, and is never run again."""
        effect = decision.effect
        if decision.verdict != "commit" or effect is None:
            return None
        view = self.gate.effect(effect["id"])
        if view is None or view.get("outcome") is None:
            return None
        if self.log:
            self.log(f"{decision.call_id}: effect {effect['id']} ran before ({view['outcome']}), not run again")
        return view

    def answer(self, call_id: str, tool: str, args: dict[str, Any], option: str) -> Decision:
        """The user's answer (``confirm`` or ``decline``) to a held call, once per call."""
        return self.answer_held(self.decide(call_id, tool, args), option)

    def answer_json(self, call_id: str, tool: str, args_json: str, option: str) -> Decision:
        """``answer`` with the arguments as the model wrote them (see ``decide_json``)."""
        return self.answer_held(self.decide_json(call_id, tool, args_json), option)

    def answer_held(self, held: Decision, option: str) -> Decision:
        """The user's answer to a call already decided as held (else the decision as it is)."""
        if held.verdict != "hold" or held.interaction is None:
            return held
        answer = {"interaction": held.interaction["id"], "option": option}
        request = {**self._request(f"{held.call_id}:{option}"), "answers": [answer]}
        return self._decided(held.call_id, self.gate.turn(request))

    def report(self, decision: Decision, outcome: str, result: Any = None) -> Optional[dict[str, Any]]:
        """Reports what running a committed call's effect did (done, failed or unknown) with what
        it returned, kept when it is JSON of at most ``MAX_RESULT`` bytes (else its text, cut)."""
        effect = decision.effect
        if effect is None:
            return None
        reported = self.gate.effect_outcome(effect["id"], outcome, result=keepable(result))
        if self.log:
            self.log(f"{decision.call_id}: effect {effect['id']} {outcome}")
        return reported


_SAVED = ("conversation", "actor", "entries", "locale", "time_zone", "at")


def keepable(result: Any) -> Any:
    """``result`` as the gate keeps it: JSON as it is, when the gate reads it and it takes at
    most ``MAX_RESULT`` bytes; anything else as its text (what the framework shows the model),
    cut to fit."""
    try:
        text: Optional[str] = wire_json(result, "result", False)
    except WarrantError:
        text = None
    if text is not None and "\\u0000" not in text and len(text.encode("utf-8")) <= MAX_RESULT:
        return result
    shown = str(result).encode("utf-8", "replace").decode("utf-8").replace("\0", "")
    # At most 6 bytes of JSON a character (a control character's escape).
    return shown[: MAX_RESULT // 6]

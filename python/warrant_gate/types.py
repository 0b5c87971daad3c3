"""Typed shapes of the wire JSON that Gate, Client and their async twins take and answer.

They are ``TypedDict``s: the values stay plain dicts (what the engine reads and answers), and a
type checker (``mypy --strict``) checks a program's requests against them. Fields not required
are in ``total=False`` classes; ``docs/design.md`` is the reference for every field.
"""

from __future__ import annotations

from typing import Any, List, Literal, Optional, TypedDict

Verdict = Literal["commit", "refuse", "ask", "hold", "no_change"]


class Entry(TypedDict, total=False):
    """A conversation entry: ``kind`` (``user``, ``agent``, ``tool``) and its ``text``."""

    kind: str
    text: str


class Act(TypedDict, total=False):
    """A proposed act: the operation and its arguments (pointers, values)."""

    op: str
    args: dict[str, Any]


class Answer(TypedDict):
    """The user's answer to a held act's interaction."""

    interaction: str
    option: str


class _TurnRequired(TypedDict):
    conversation: str
    turn: str
    actor: str
    at: str
    time_zone: str
    locale: str


class TurnRequest(_TurnRequired, total=False):
    """``POST /v1/turns``, ``Gate.turn``: one turn of a conversation."""

    entries: List[Entry]
    acts: List[Act]
    answers: List[Answer]


class Reason(TypedDict, total=False):
    """Why an act got its verdict: a stable reason code, the field at fault, the policies."""

    code: str
    field: str
    policies: List[str]


class ActVerdict(TypedDict, total=False):
    source: str
    index: int
    op: str
    verdict: Verdict
    reasons: List[Reason]
    interaction: str


class Interaction(TypedDict, total=False):
    id: str
    op: str
    args: dict[str, Any]
    options: List[str]


class Effect(TypedDict, total=False):
    """What a committed act may do: its id (for ``effect_outcome``) and idempotency key."""

    id: str
    idempotency_key: str
    op: str


class TurnResponse(TypedDict, total=False):
    """What a turn answers; ``repeated`` is true for a turn key decided before."""

    conversation: str
    turn: str
    contract: str
    readings: List[Any]
    acts: List[ActVerdict]
    interactions: List[Interaction]
    effects: List[Effect]
    reply: Optional[Any]
    repeated: bool


class EffectOutcome(TypedDict, total=False):
    """What ``effect_outcome`` answers."""

    effect: str
    outcome: str
    recorded: bool
    reverted: bool
    rows: List[dict[str, Any]]
    findings: List[dict[str, Any]]


class StoredEffect(TypedDict, total=False):
    """What ``effect(id)`` answers: the outcome (None until reported) and the result kept."""

    id: str
    op: str
    outcome: Optional[str]
    holds: List[dict[str, Any]]
    rows: List[dict[str, Any]]
    findings: List[dict[str, Any]]
    result: Any


class Rendering(TypedDict, total=False):
    """What ``render(text)`` answers."""

    rule: str
    text: str
    rendered: str
    words: List[Any]


__all__ = [
    "Act",
    "ActVerdict",
    "Answer",
    "Effect",
    "EffectOutcome",
    "Entry",
    "Interaction",
    "Reason",
    "Rendering",
    "StoredEffect",
    "TurnRequest",
    "TurnResponse",
    "Verdict",
]

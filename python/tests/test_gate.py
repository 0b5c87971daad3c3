"""The embedded Gate: the wire JSON as dicts, refusals as exceptions, SQLite and PostgreSQL,
shared by threads."""

from __future__ import annotations

import concurrent.futures
import pathlib

import pytest

from conftest import RETAIL, cancel, confirm
from warrant_gate import Gate, RecordError, RequestError, UnknownEffectError, WarrantError


def hold_confirm_report(gate: Gate, conversation: str) -> tuple[dict, dict, dict]:
    held = gate.turn(cancel(conversation))
    confirmed = gate.turn(confirm(conversation, held["interactions"][0]["id"]))
    outcome = gate.effect_outcome(confirmed["effects"][0]["id"], "done")
    return held, confirmed, outcome


def check_cycle(gate: Gate, conversation: str = "a") -> None:
    held, confirmed, outcome = hold_confirm_report(gate, conversation)
    assert held["acts"][0]["verdict"] == "hold"
    assert held["acts"][0]["reasons"] == [{"code": "confirmation_required"}]
    assert confirmed["acts"][0]["verdict"] == "commit"
    assert confirmed["effects"][0]["op"] == "cancel_pending_order"
    assert outcome == {
        "effect": confirmed["effects"][0]["id"],
        "outcome": "done",
        "recorded": True,
        "reverted": False,
    }
    assert gate.record("order", "#W6247578")["value"]["status"] == "cancelled"
    assert gate.replay() == {"turns": 2, "identical": 2, "changes": [], "findings": []}


def test_a_held_cancellation_commits_once_confirmed_on_sqlite(sqlite_store: str) -> None:
    check_cycle(Gate(RETAIL, sqlite_store))


def test_the_same_on_postgresql(postgres_store: str) -> None:
    check_cycle(Gate(str(RETAIL), postgres_store))


def test_a_repeated_turn_is_answered_from_the_store(sqlite_store: str) -> None:
    gate = Gate(RETAIL, sqlite_store)
    first = gate.turn(cancel("a"))
    again = gate.turn(cancel("a"))
    assert "repeated" not in first
    assert again == {**first, "repeated": True}


def test_a_refused_request_raises_with_its_code_and_field(sqlite_store: str) -> None:
    gate = Gate(RETAIL, sqlite_store)
    request = cancel("a")
    del request["turn"]
    with pytest.raises(RequestError) as raised:
        gate.turn(request)
    assert (raised.value.code, raised.value.field) == ("invalid_input", "turn")
    request = cancel("a")
    request["acts"] = [{"op": "launch_rocket", "args": {}}]
    refused = gate.turn(request)  # an act refused is a verdict, not an exception
    assert refused["acts"][0]["verdict"] == "refuse"
    assert refused["acts"][0]["reasons"][0]["code"] == "unknown_operation"
    with pytest.raises(RequestError) as raised:
        gate.turn([request])  # type: ignore[arg-type]
    assert (raised.value.code, raised.value.field) == ("invalid_input", "request")
    with pytest.raises(RequestError) as raised:
        gate.turn({**cancel("b"), "at": float("inf")})
    assert raised.value.field in ("request", "at")


def test_a_bad_contract_or_store_raises_naming_it(tmp_path: pathlib.Path, sqlite_store: str) -> None:
    with pytest.raises(RequestError) as raised:
        Gate(tmp_path / "missing.toml", sqlite_store)
    assert (raised.value.code, raised.value.field) == ("invalid_input", "contract")
    with pytest.raises(RequestError) as raised:
        Gate(RETAIL, "mysql://nowhere")
    assert (raised.value.code, raised.value.field) == ("invalid_input", "store")


def test_outcomes_and_records_raise_the_services_codes(sqlite_store: str) -> None:
    gate = Gate(RETAIL, sqlite_store)
    with pytest.raises(UnknownEffectError) as raised:
        gate.effect_outcome("eff_nope", "done")
    assert (raised.value.code, raised.value.field) == ("unknown_effect", "effect")
    with pytest.raises(RequestError) as raised:
        gate.effect_outcome("eff_nope", "maybe")
    assert (raised.value.code, raised.value.field) == ("invalid_input", "outcome")
    with pytest.raises(RequestError) as raised:
        gate.effect_outcome("eff_nope", "done", rows=[{"table": "order"}])
    assert raised.value.code == "invalid_input"
    row = gate.record("order", "#W6247578")
    assert gate.record("order", "#W0000000") is None
    written = gate.put_record("order", "#W6247578", row["value"], if_match=row["revision"])
    assert written["revision"] == row["revision"] + 1
    with pytest.raises(RecordError) as raised:
        gate.put_record("order", "#W6247578", row["value"], if_match=row["revision"])
    assert (raised.value.code, raised.value.field) == ("stale_revision", "if-match")
    with pytest.raises(RecordError) as raised:
        gate.record("planet", "earth")
    assert (raised.value.code, raised.value.field) == ("unknown_table", "table")
    assert isinstance(raised.value, WarrantError)


def test_render_numbers_the_words_a_pointer_counts(sqlite_store: str) -> None:
    rendered = Gate(RETAIL, sqlite_store).render("Send it to 12 Elm St, please.")
    assert rendered["rendered"] == "[1]Send [2]it [3]to [4]12 [5]Elm [6]St, [7]please."
    assert [w["n"] for w in rendered["words"]] == list(range(1, 8))


def test_outbound_clears_an_unbacked_draft_to_fallback_copy(sqlite_store: str) -> None:
    gate = Gate(RETAIL, sqlite_store)
    request = {
        "conversation": "seed003",
        "actor": "yusuf_rossi_9620",
        "path": "scheduled",
        "at": "2026-11-29T16:00:00Z",
        "locale": "en-US",
        "draft": {
            "text": "Your payment link is attached.",
            "claims": [{"claim": "payment_link_sent", "order": "#W0000000"}],
        },
    }
    message = gate.outbound(request)
    assert message["basis"] == "fallback"
    assert message["reasons"][0] == {**message["reasons"][0], "code": "claim_not_visible"}
    assert "outbox" not in message
    stored = gate.outbound(request, submit=True)
    assert stored["outbox"]["duplicate"] is False
    assert gate.outbound(request, submit=True)["outbox"] == {**stored["outbox"], "duplicate": True}
    with pytest.raises(RequestError) as raised:
        gate.outbound({**request, "path": "carrier_pigeon"})
    assert raised.value.field == "path"


def test_threads_share_one_gate_and_each_turn_is_decided_once(tmp_path: pathlib.Path) -> None:
    gate = Gate(RETAIL, f"sqlite:{tmp_path / 'w.sqlite'}")
    conversations = [f"c{i}" for i in range(16)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        held = list(pool.map(lambda c: gate.turn(cancel(c)), conversations))
    assert [h["acts"][0]["verdict"] for h in held] == ["hold"] * len(conversations)
    assert [h["conversation"] for h in held] == conversations
    # The same order, confirmed in sixteen conversations at once: exactly one commits.
    answers = [confirm(c, h["interactions"][0]["id"]) for c, h in zip(conversations, held)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        confirmed = list(pool.map(gate.turn, answers))
    verdicts = [c["acts"][0]["verdict"] for c in confirmed]
    assert verdicts.count("commit") == 1, verdicts
    assert gate.replay()["identical"] == 2 * len(conversations)

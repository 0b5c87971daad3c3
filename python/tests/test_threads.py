"""A Gate among Python threads: the GIL is released while it decides, and one gate shared by
many threads answers each thread its own request's answer."""

from __future__ import annotations

import concurrent.futures
import json
import pathlib
import shutil
import subprocess
import threading
import urllib.parse
from typing import Any

import pytest

from conftest import BASE, POSTGRES, RETAIL
from warrant_gate import Gate


def psql(*args: str, **popen: Any) -> subprocess.Popen:
    """psql on the test database, quiet, tuples only, stopping at the first error."""
    command = ["psql", POSTGRES, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", *args]
    return subprocess.Popen(command, text=True, **popen)


def waiting_on(table: str) -> int:
    """How many sessions wait for a lock on `table` (schema-qualified) now."""
    query = f"SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = '{table}'::regclass"
    asked = psql("-c", query, stdout=subprocess.PIPE)
    out, _ = asked.communicate(timeout=30)
    assert asked.returncode == 0
    return int(out.strip())


def test_python_runs_while_the_gate_waits_inside_a_turn(postgres_store: str) -> None:
    """A turn that cannot finish until another Python thread acts, after the turn is inside
    the engine: a session outside holds the store's `turns` table locked, the turn waits for it
    in the engine, and a Python thread sees it waiting (in `pg_locks`) and only then lets the
    lock go. Were the GIL held while the gate decides, that thread could never run, and the
    turn would wait until PostgreSQL ended the locking session (its idle-in-transaction
    timeout), which the thread's record tells apart. Without psql it fails: it never skips."""
    if shutil.which("psql") is None:
        pytest.fail("this test needs psql, the PostgreSQL client, on PATH")
    gate = Gate(RETAIL, postgres_store)
    gate.turn(cancel_as("warm"))  # migrated and seeded before the lock is taken
    schema = urllib.parse.parse_qs(urllib.parse.urlparse(postgres_store).query)["schema"][0]
    table = f"{schema}.turns"
    holder = psql(stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert holder.stdin is not None and holder.stdout is not None
    holder.stdin.write(
        "SET idle_in_transaction_session_timeout = '30s';\n"
        f"BEGIN; LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE; SELECT 'locked';\n"
    )
    holder.stdin.flush()
    assert holder.stdout.readline().strip() == "locked"

    seen: dict[str, Any] = {"polls": 0, "waiting": 0, "released": False}
    decided = threading.Event()

    def release_once_the_turn_waits() -> None:
        assert holder.stdin is not None
        while not decided.is_set():
            seen["polls"] += 1
            seen["waiting"] = waiting_on(table)
            if seen["waiting"]:
                holder.stdin.write("COMMIT;\n")
                holder.stdin.flush()
                seen["released"] = True
                return

    watcher = threading.Thread(target=release_once_the_turn_waits)
    watcher.start()
    try:
        held = gate.turn(cancel_as("inside"))
    finally:
        decided.set()
        watcher.join(timeout=60)
        holder.stdin.close()
        holder.wait(timeout=30)
    assert held["acts"][0]["verdict"] == "hold"
    # The thread ran Python while the turn waited in the engine, and its release let it finish.
    assert seen["waiting"] == 1 and seen["released"], seen


def cancel_as(conversation: str, actor: str = "yusuf_rossi_9620", order: str = "#W6247578") -> dict:
    """A turn in which `actor` proposes cancelling `order`."""
    return {
        **BASE,
        "actor": actor,
        "conversation": conversation,
        "turn": "propose",
        "entries": [{"kind": "user", "text": "Cancel it please."}],
        "acts": [{"op": "cancel_pending_order", "args": {"order_id": order, "reason": "no longer needed"}}],
    }


def confirm_as(proposed: dict, held: dict) -> dict:
    """The customer's confirmation, in the conversation of `proposed`, of the act `held` holds."""
    return {
        **BASE,
        "actor": proposed["actor"],
        "conversation": proposed["conversation"],
        "turn": "confirm",
        "answers": [{"interaction": held["interactions"][0]["id"], "option": "confirm"}],
    }


def pending_orders() -> list[tuple[str, str]]:
    """(order, its customer) for the retail data's pending orders, by order id."""
    orders = json.loads((RETAIL.parent / "data" / "orders.json").read_text())
    return sorted((key, row["user_id"]) for key, row in orders.items() if row["status"] == "pending")


def requests() -> list[dict]:
    """Twenty-four turns with different answers: twelve customers each proposing to cancel a
    pending order of their own (held), and each proposing to cancel the next one's (refused)."""
    picked: list[tuple[str, str]] = []
    for order, user in pending_orders():
        if user not in {u for _, u in picked}:
            picked.append((order, user))
        if len(picked) == 12:
            break
    own = [cancel_as(f"own-{i}", user, order) for i, (order, user) in enumerate(picked)]
    foreign = [
        cancel_as(f"foreign-{i}", user, picked[(i + 1) % len(picked)][0]) for i, (_, user) in enumerate(picked)
    ]
    return own + foreign


def test_one_gate_shared_by_threads_answers_each_its_own_request(tmp_path: pathlib.Path) -> None:
    """The same requests decided one after another on a gate of their own, and at once by eight
    threads sharing one gate: every thread gets the answer its own request has alone."""
    asked = requests()
    alone = Gate(RETAIL, f"sqlite:{tmp_path / 'alone.sqlite'}")
    expected = [alone.turn(request) for request in asked]
    shared = Gate(RETAIL, f"sqlite:{tmp_path / 'shared.sqlite'}")
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        answered = list(pool.map(shared.turn, asked))
    assert answered == expected
    verdicts = [a["acts"][0]["verdict"] for a in answered]
    assert verdicts == ["hold"] * 12 + ["refuse"] * 12, verdicts
    assert len({a["conversation"] for a in answered}) == len(asked)
    assert len({a["interactions"][0]["id"] for a in answered[:12]}) == 12

    # Each held cancellation confirmed, all at once: each commits its own order's effect.
    confirmations = [confirm_as(proposed, held) for proposed, held in zip(asked, answered[:12])]
    expected = [alone.turn(c) for c in confirmations]
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        answered = list(pool.map(shared.turn, confirmations))
    assert answered == expected
    assert [a["acts"][0]["verdict"] for a in answered] == ["commit"] * 12
    orders = [c["acts"][0]["args"]["order_id"] for c in asked[:12]]
    for order in orders:
        assert shared.record("order", order)["value"]["status"] == "cancelled"
    assert shared.replay() == alone.replay()

"""Every bad input is one error of the package's hierarchy, the same class, code and field from
the embedded Gate and from the Client, and none crashes the interpreter (the fuzz runs in a
subprocess, so that a crash fails the test rather than ending the run)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from typing import Any, Callable

import pytest

from conftest import BASE, RETAIL, Served
from warrant_gate import MAX_DEPTH, Client, Gate, RequestError, WarrantError

HERE = os.path.dirname(os.path.abspath(__file__))


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def request(**fields: Any) -> dict[str, Any]:
    return {**BASE, "conversation": "bad", "turn": "t", "entries": [{"kind": "user", "text": "hi"}], **fields}


ACT = {"op": "get_order_details", "args": {"order_id": "#W6247578"}}
DEEP_TEXT = '{"acts": ' + "[" * 100_000 + "]" * 100_000 + "}"
BAD: list[tuple[str, Callable[[Any], Any]]] = [
    ("a list for the request", lambda g: g.turn([])),
    ("None for the request", lambda g: g.turn(None)),
    ("a str for the request", lambda g: g.turn("{}")),
    ("a set inside", lambda g: g.turn(request(acts=[{"op": "x", "args": {"ids": {1, 2}}}]))),
    ("bytes inside", lambda g: g.turn(request(conversation=b"c"))),
    ("an object inside", lambda g: g.turn(request(acts=[object()]))),
    ("a key that is not a str", lambda g: g.turn(request(acts=[{1: "x"}]))),
    ("a list 30,000 deep", lambda g: g.turn(request(acts=nested(30_000)))),
    ("a list 100,000 deep", lambda g: g.turn(request(acts=nested(100_000)))),
    ("a dict 100,000 deep", lambda g: g.turn(request(acts=[_deep_dict(100_000)]))),
    ("one level past MAX_DEPTH", lambda g: g.turn(request(acts=nested(MAX_DEPTH)))),
    ("NaN", lambda g: g.turn(request(acts=[{"op": "x", "args": {"n": math.nan}}]))),
    ("infinity", lambda g: g.turn(request(acts=[{"op": "x", "args": {"n": -math.inf}}]))),
    ("an int past 64 bits", lambda g: g.turn(request(acts=[{"op": "x", "args": {"n": 2**70}}]))),
    ("a lone surrogate in a value", lambda g: g.turn(request(conversation="c\ud800"))),
    ("a lone surrogate in a key", lambda g: g.turn(request(acts=[{"op": "x", "args": {"\udcff": 1}}]))),
    ("non-UTF-8 bytes decoded with surrogateescape", lambda g: g.turn(request(conversation=b"\xff".decode("utf-8", "surrogateescape")))),
    ("U+0000 in a text", lambda g: g.turn(request(entries=[{"kind": "user", "text": "a\0b"}]))),
    ("U+0000 in a key", lambda g: g.turn(request(acts=[{"op": "x", "args": {"a\0": 1}}]))),
    ("2 MiB of request", lambda g: g.turn(request(entries=[{"kind": "user", "text": "a" * (2 << 20)}]))),
    ("a repeated key in JSON text", lambda g: g.turn_json('{"conversation": "a", "conversation": "b"}')),
    ("a repeated key deep in JSON text", lambda g: g.turn_json('{"acts": [{"op": "x", "args": {"a": 1, "a": 2}}]}')),
    ("JSON text 100,000 deep", lambda g: g.turn_json(DEEP_TEXT)),
    ("JSON text that is a list", lambda g: g.turn_json("[]")),
    ("JSON text that is not JSON", lambda g: g.turn_json("{nope")),
    ("JSON text as bytes", lambda g: g.turn_json(b"{}")),
    ("JSON text with a lone surrogate", lambda g: g.turn_json('{"conversation": "\ud800"}')),
    ("JSON text with NaN", lambda g: g.turn_json('{"x": NaN}')),
    ("a record row given as a str", lambda g: g.put_record("orders", "#W1", "row")),
    ("a record row given as a list", lambda g: g.put_record("orders", "#W1", [1])),
    ("U+0000 in a record key", lambda g: g.put_record("orders", "#W\0", {"order_id": "#W"})),
    ("U+0000 in a record value", lambda g: g.put_record("orders", "#W1", {"order_id": "#W1\0"})),
    ("a record key that is an int", lambda g: g.put_record("orders", 5, {})),
    ("a record table that is None", lambda g: g.record(None, "#W1")),
    ("if_match that is a str", lambda g: g.put_record("orders", "#W1", {}, if_match="3")),
    ("rows given as a str", lambda g: g.effect_outcome("eff_x", "done", "rows")),
    ("a row given as a str", lambda g: g.effect_outcome("eff_x", "done", ["row"])),
    ("an effect id that is an int", lambda g: g.effect_outcome(5, "done")),
    ("an outcome that is None", lambda g: g.effect_outcome("eff_x", None)),
    ("a result with a set", lambda g: g.effect_outcome("eff_x", "done", result={1})),
    ("render of an int", lambda g: g.render(5)),
    ("render with U+0000", lambda g: g.render("a\0")),
    ("tools in a format that is not one", lambda g: g.tools("xml")),
    ("tools in a format that is an int", lambda g: g.tools(5)),
]


def _deep_dict(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def fault(call: Callable[[Any], Any], gate: Any) -> WarrantError:
    with pytest.raises(WarrantError) as raised:
        call(gate)
    return raised.value


@pytest.mark.parametrize("name,call", BAD, ids=[name for name, _ in BAD])
def test_a_bad_input_is_the_same_error_from_gate_and_client(
    name: str, call: Callable[[Any], Any], sqlite_store: str, served: Served
) -> None:
    with Gate(RETAIL, sqlite_store) as gate, Client(served.url, served.key) as client:
        embedded, http = fault(call, gate), fault(call, client)
    assert type(embedded) is type(http), (name, embedded, http)
    assert (embedded.code, embedded.field) == (http.code, http.field), (name, embedded, http)
    assert embedded.code in {"invalid_input", "payload_too_large", "invalid_record"}, (name, embedded)
    assert isinstance(embedded, RequestError), (name, embedded)


def test_max_depth_is_accepted_and_one_more_level_is_refused(sqlite_store: str) -> None:
    with Gate(RETAIL, sqlite_store) as gate:
        # request, acts, one act, args, then the value: the value may nest MAX_DEPTH - 4 deep.
        args = {"order_id": "#W6247578", "x": nested(MAX_DEPTH - 4)}
        answered = gate.turn(request(acts=[{"op": "get_order_details", "args": args}]))
        assert answered["acts"][0]["verdict"] in {"commit", "refuse", "ask", "hold"}
        too_deep = {"order_id": "#W6247578", "x": nested(MAX_DEPTH - 3)}
        with pytest.raises(RequestError) as raised:
            gate.turn(request(acts=[{"op": "get_order_details", "args": too_deep}]))
        assert raised.value.code == "invalid_input"
        assert f"deeper than {MAX_DEPTH}" in raised.value.message


@pytest.mark.parametrize("bad", [5, None, 1.5, b"x", ["contract.toml"]])
def test_a_constructor_given_a_wrong_type_names_the_argument(bad: Any, tmp_path: Any) -> None:
    with pytest.raises(RequestError) as raised:
        Gate(bad, f"sqlite:{tmp_path / 'w.sqlite'}")
    assert raised.value.field == "contract"
    with pytest.raises(RequestError) as raised:
        Gate(RETAIL, bad)
    assert raised.value.field == "store"
    with pytest.raises(RequestError) as raised:
        Client(bad, "key")
    assert raised.value.field == "base_url"
    with pytest.raises(RequestError) as raised:
        Client("http://127.0.0.1:1", bad)
    assert raised.value.field == "api_key"


def test_fuzzed_inputs_never_crash_the_interpreter(sqlite_store: str, served: Served) -> None:
    env = {**os.environ, "FUZZ_STORE": sqlite_store, "FUZZ_URL": served.url, "FUZZ_KEY": served.key}
    done = subprocess.run(
        [sys.executable, os.path.join(HERE, "fuzz_inputs.py"), "--seed", "53"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, (done.returncode, done.stdout[-2000:], done.stderr[-4000:])
    last = done.stdout.strip().splitlines()[-1]
    print(last)
    tried = int(last.split()[0])
    assert tried >= 2000, last
    assert " 0 not of the hierarchy" in last, last

"""The Client against a real `warrant serve` process: the same answers as the embedded Gate,
byte for byte, and the same exceptions with the same codes and fields."""

from __future__ import annotations

import json

import pytest

from conftest import RETAIL, Served, cancel, confirm
from test_gate import hold_confirm_report
from warrant_gate import (
    AuthError,
    Client,
    Gate,
    RecordError,
    RequestError,
    UnknownEffectError,
    WarrantError,
    tools,
)


def test_the_client_answers_what_the_embedded_gate_answers(served: Served, sqlite_store: str) -> None:
    with Client(served.url, served.key) as client:
        over_http = hold_confirm_report(client, "a")  # type: ignore[arg-type]
        embedded = hold_confirm_report(Gate(RETAIL, sqlite_store), "a")
        assert over_http == embedded
        assert over_http[1]["acts"][0]["verdict"] == "commit"
        assert client.record("order", "#W6247578")["value"]["status"] == "cancelled"
        text = "Send it to 12 Elm St, please."
        assert client.render(text) == Gate(RETAIL, sqlite_store).render(text)


def test_the_client_raises_the_gates_exceptions(served: Served) -> None:
    client = Client(served.url, served.key)
    request = cancel("a")
    del request["turn"]
    with pytest.raises(RequestError) as raised:
        client.turn(request)
    assert (raised.value.code, raised.value.field, raised.value.status) == ("invalid_input", "turn", 400)
    with pytest.raises(UnknownEffectError) as raised:
        client.effect_outcome("eff_nope", "done")
    assert (raised.value.code, raised.value.field, raised.value.status) == ("unknown_effect", "effect", 404)
    row = client.record("order", "#W6247578")
    assert client.record("order", "#W0000000") is None
    client.put_record("order", "#W6247578", row["value"], if_match=row["revision"])
    with pytest.raises(RecordError) as raised:
        client.put_record("order", "#W6247578", row["value"], if_match=row["revision"])
    assert (raised.value.code, raised.value.field, raised.value.status) == ("stale_revision", "if-match", 409)
    with pytest.raises(WarrantError) as raised:
        client.replay()
    assert raised.value.code == "no_route"
    held = client.turn(cancel("b"))
    client.turn(confirm("b", held["interactions"][0]["id"]))
    with pytest.raises(RequestError) as raised:
        client.turn({**confirm("b", held["interactions"][0]["id"]), "actor": "someone_else"})
    assert raised.value.code == "turn_key_reused"
    assert raised.value.status == 409
    with pytest.raises(AuthError) as raised:
        Client(served.url, "wrt_acme.nope").turn(cancel("c"))
    assert (raised.value.code, raised.value.status) == ("unauthorized", 401)


@pytest.mark.parametrize("format", ["openai", "anthropic", "mcp"])
def test_the_client_hands_out_the_gates_tool_definitions(served: Served, sqlite_store: str, format: str) -> None:
    embedded = Gate(RETAIL, sqlite_store).tools(format)  # type: ignore[call-overload]
    with Client(served.url, served.key) as client:
        over_http = client.tools(format)  # type: ignore[call-overload]
    # The same JSON, keys in the same order, from `GET /v1/tools`.
    assert json.dumps(over_http) == json.dumps(embedded)
    listed = over_http["tools"] if format == "mcp" else over_http
    assert len(listed) == len(tools(RETAIL, "mcp")["tools"]) > 0


def test_the_clients_tools_default_and_refusal_are_the_gates(served: Served, sqlite_store: str) -> None:
    gate = Gate(RETAIL, sqlite_store)
    client = Client(served.url, served.key)
    assert client.tools() == gate.tools()
    for format in ["gemini", "OpenAI"]:
        with pytest.raises(RequestError) as over_http:
            client.tools(format)  # type: ignore[call-overload]
        with pytest.raises(RequestError) as embedded:
            gate.tools(format)  # type: ignore[call-overload]
        assert (over_http.value.code, over_http.value.field, over_http.value.status) == ("invalid_input", "format", 400)
        assert (embedded.value.code, embedded.value.field) == (over_http.value.code, over_http.value.field)
        assert over_http.value.message == embedded.value.message

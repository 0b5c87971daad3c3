"""The gate served by ``warrant serve``, over HTTP: the same methods and exceptions as Gate.

Every body is encoded by the native module's encoder (``_native.wire_json``), the one the
embedded ``Gate`` converts with, so a value that is not JSON (a set, NaN, a lone surrogate, a
list nested past ``MAX_DEPTH``, more than ``MAX_BODY`` bytes) is refused here exactly as ``Gate``
refuses it, before anything is sent; the rest the service reads as strictly as the CLI.
"""

from __future__ import annotations

from typing import Any, Literal, Mapping, Optional, Union, overload
from urllib.parse import quote

import httpx

from . import _args
from ._errors import RequestError, WarrantError, error_for
from ._native import MAX_BODY, wire_json

_JSON = {"Content-Type": "application/json"}


def _json_text(text: Any) -> bytes:
    """The model's JSON text as a body, bounded as ``Gate.turn_json`` bounds it."""
    if not isinstance(text, str):
        raise RequestError(
            f"`request` is of type {type(text).__name__}: give JSON text as a str", "invalid_input", "request"
        )
    try:
        body = text.encode("utf-8")
    except UnicodeEncodeError:
        raise RequestError("`request` holds a lone surrogate, not UTF-8 text", "invalid_input", "request") from None
    if len(body) > MAX_BODY:
        raise RequestError(
            f"`request` is {len(body)} bytes; at most {MAX_BODY} as warrant serve takes",
            "payload_too_large",
            "request",
        )
    return body


def _outcome_body(outcome: Any, rows: Any, result: Any) -> bytes:
    parts = [f'"outcome": {wire_json(_args.text(outcome, "outcome"), "outcome", False)}']
    if rows is not None:
        parts.append(f'"rows": {wire_json(rows, "rows", False)}')
    if result is not None:
        parts.append(f'"result": {wire_json(result, "result", False)}')
    return ("{" + ", ".join(parts) + "}").encode("utf-8")


class _Call:
    """One HTTP exchange of a method: what to send, and which refusal means "none"."""

    def __init__(
        self,
        method: str,
        path: str,
        body: Union[str, bytes, None] = None,
        headers: Optional[dict[str, str]] = None,
        params: Optional[dict[str, str]] = None,
        none_on: Optional[str] = None,
    ) -> None:
        self.method, self.path, self.body = method, path, body
        self.headers = headers if headers is not None else (dict(_JSON) if body is not None else {})
        self.params, self.none_on = params, none_on


def _quoted(value: Any, field: str) -> str:
    return quote(_args.text(value, field), safe="")


def _turn(request: Any) -> _Call:
    return _Call("POST", "/v1/turns", wire_json(request, "request", True))


def _turn_json(text: Any) -> _Call:
    return _Call("POST", "/v1/turns", _json_text(text))


def _outbound(request: Any) -> _Call:
    return _Call("POST", "/v1/outbound", wire_json(request, "request", True))


def _effect_outcome(effect: Any, outcome: Any, rows: Any, result: Any) -> _Call:
    path = f"/v1/effects/{_quoted(effect, 'effect')}/outcome"
    return _Call("POST", path, _outcome_body(outcome, rows, result))


def _effect(effect: Any) -> _Call:
    return _Call("GET", f"/v1/effects/{_quoted(effect, 'effect')}", none_on="unknown_effect")


def _render(text: Any) -> _Call:
    return _Call("POST", "/v1/render", wire_json({"text": _args.text(text, "text")}, "request", True))


def _tools(format: Any) -> _Call:
    return _Call("GET", "/v1/tools", params={"format": _args.text(format, "format")})


def _record(table: Any, key: Any) -> _Call:
    path = f"/v1/records/{_quoted(table, 'table')}/{_quoted(key, 'key')}"
    return _Call("GET", path, none_on="unknown_record")


def _put_record(table: Any, key: Any, value: Any, if_match: Any, if_none_match: Any) -> _Call:
    body = wire_json(value, "value", True)
    headers = dict(_JSON)
    if if_match is not None:
        if isinstance(if_match, bool) or not isinstance(if_match, int):
            raise RequestError("`if_match` is a revision: give an int", "invalid_input", "if-match")
        headers["If-Match"] = f'"{if_match}"'
    if not isinstance(if_none_match, bool):
        raise RequestError("`if_none_match` is a bool", "invalid_input", "if-none-match")
    if if_match is not None and if_none_match:
        raise RequestError("give if_match or if_none_match", "invalid_input", "if-match")
    if if_none_match:
        headers["If-None-Match"] = "*"
    path = f"/v1/records/{_quoted(table, 'table')}/{_quoted(key, 'key')}"
    return _Call("PUT", path, body, headers)


def _no_replay() -> WarrantError:
    return WarrantError("the service does not replay over HTTP; run `warrant replay` on its store", "no_route", None)


def _client_args(base_url: Any, api_key: Any, timeout: Any) -> dict[str, Any]:
    """httpx's arguments, each checked as the constructors' contract says (naming the argument)."""
    _args.text(base_url, "base_url")
    _args.text(api_key, "api_key")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise RequestError(f"`timeout` is of type {type(timeout).__name__}: give seconds", "invalid_input", "timeout")
    return {
        "base_url": base_url.rstrip("/"),
        "headers": {"Authorization": f"Bearer {api_key}"},
        "timeout": timeout,
    }


def _answer(call: _Call, response: httpx.Response) -> Any:
    """The answer's JSON, None for the refusal that means none, else the refusal raised."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.is_success:
        return body
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        text = response.text[:200]
        raise error_for(f"HTTP {response.status_code}: {text}", "internal", None, response.status_code)
    if call.none_on is not None and error.get("code") == call.none_on:
        return None
    raise error_for(
        str(error.get("message", "")),
        str(error.get("code", "internal")),
        error.get("field"),
        response.status_code,
    )


class Client:
    """A tenant's view of ``warrant serve`` at ``base_url``, with its API key.

    ``Client(url, key).turn(request)`` answers what ``Gate(contract, store).turn(request)``
    answers, and raises the same exceptions with the same codes and fields.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        transport: Optional[httpx.BaseTransport] = None,
    ) -> None:
        self._http = httpx.Client(**_client_args(base_url, api_key, timeout), transport=transport)

    def __repr__(self) -> str:
        return f"Client({str(self._http.base_url)!r})"

    def close(self) -> None:
        """Closes the connection pool."""
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, call: _Call) -> Any:
        response = self._http.request(
            call.method, call.path, content=call.body, headers=call.headers, params=call.params
        )
        return _answer(call, response)

    def turn(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Decides one turn request (``POST /v1/turns``)."""
        return self._run(_turn(request))

    def turn_json(self, text: str) -> dict[str, Any]:
        """Decides one turn request given as JSON text (``POST /v1/turns`` with the text as its
        body), read as strictly as ``warrant turn`` reads it: a repeated key is refused."""
        return self._run(_turn_json(text))

    def outbound(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Clears one outbound request and stores it in the outbox (``POST /v1/outbound``)."""
        return self._run(_outbound(request))

    def effect_outcome(
        self, effect: str, outcome: str, rows: Optional[list[dict[str, Any]]] = None, *, result: Any = None
    ) -> dict[str, Any]:
        """Reports an effect's outcome (``POST /v1/effects/{id}/outcome``), with what running
        it returned (``result``, any JSON up to ``MAX_RESULT`` bytes) kept beside it."""
        return self._run(_effect_outcome(effect, outcome, rows, result))

    def effect(self, effect: str) -> Optional[dict[str, Any]]:
        """The effect with its outcome and result (``GET /v1/effects/{id}``), or None."""
        return self._run(_effect(effect))

    def render(self, text: str) -> dict[str, Any]:
        """The numbered rendering of ``text`` (``POST /v1/render``)."""
        return self._run(_render(text))

    @overload
    def tools(self, format: Literal["mcp"] = "mcp") -> dict[str, Any]: ...
    @overload
    def tools(self, format: Literal["openai", "anthropic"]) -> list[dict[str, Any]]: ...
    def tools(self, format: str = "mcp") -> Union[dict[str, Any], list[dict[str, Any]]]:
        """The contract's tool definitions in ``format`` (``GET /v1/tools?format=FORMAT``), as
        ``Gate.tools(format)`` and ``warrant tools --format FORMAT`` give them for the contract
        the service runs. A format that is not ``openai``, ``anthropic`` or ``mcp`` raises
        ``RequestError`` (``invalid_input``, field ``format``)."""
        return self._run(_tools(format))  # type: ignore[no-any-return]

    def replay(self) -> dict[str, Any]:
        """The service has no replay route: replay its store with ``warrant replay``."""
        raise _no_replay()

    def record(self, table: str, key: str) -> Optional[dict[str, Any]]:
        """The row with its revision (``GET /v1/records/{table}/{key}``), or None."""
        return self._run(_record(table, key))

    def put_record(
        self,
        table: str,
        key: str,
        value: Any,
        *,
        if_match: Optional[int] = None,
        if_none_match: bool = False,
    ) -> dict[str, Any]:
        """Stores a row (``PUT /v1/records/{table}/{key}``) under its precondition."""
        return self._run(_put_record(table, key, value, if_match, if_none_match))

"""The gate served by ``warrant serve``, over HTTP: the same methods and exceptions as Gate."""

from __future__ import annotations

from typing import Any, Literal, Optional, Union, overload
from urllib.parse import quote

import httpx

from ._errors import WarrantError, error_for


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
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=timeout,
            transport=transport,
        )

    def __repr__(self) -> str:
        return f"Client({str(self._http.base_url)!r})"

    def close(self) -> None:
        """Closes the connection pool."""
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _answer(self, response: httpx.Response) -> Any:
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
        raise error_for(
            str(error.get("message", "")),
            str(error.get("code", "internal")),
            error.get("field"),
            response.status_code,
        )

    def _post(self, path: str, body: Any) -> Any:
        return self._answer(self._http.post(path, json=body))

    def turn(self, request: dict[str, Any]) -> dict[str, Any]:
        """Decides one turn request (``POST /v1/turns``)."""
        return self._post("/v1/turns", request)

    def outbound(self, request: dict[str, Any]) -> dict[str, Any]:
        """Clears one outbound request and stores it in the outbox (``POST /v1/outbound``)."""
        return self._post("/v1/outbound", request)

    def effect_outcome(
        self, effect: str, outcome: str, rows: Optional[list[dict[str, Any]]] = None
    ) -> dict[str, Any]:
        """Reports an effect's outcome (``POST /v1/effects/{id}/outcome``)."""
        body: dict[str, Any] = {"outcome": outcome}
        if rows is not None:
            body["rows"] = rows
        return self._post(f"/v1/effects/{quote(effect, safe='')}/outcome", body)

    def render(self, text: str) -> dict[str, Any]:
        """The numbered rendering of ``text`` (``POST /v1/render``)."""
        return self._post("/v1/render", {"text": text})

    @overload
    def tools(self, format: Literal["mcp"] = "mcp") -> dict[str, Any]: ...
    @overload
    def tools(self, format: Literal["openai", "anthropic"]) -> list[dict[str, Any]]: ...
    def tools(self, format: str = "mcp") -> Union[dict[str, Any], list[dict[str, Any]]]:
        """The contract's tool definitions in ``format`` (``GET /v1/tools?format=FORMAT``), as
        ``Gate.tools(format)`` and ``warrant tools --format FORMAT`` give them for the contract
        the service runs. A format that is not ``openai``, ``anthropic`` or ``mcp`` raises
        ``RequestError`` (``invalid_input``, field ``format``)."""
        return self._answer(self._http.get("/v1/tools", params={"format": format}))

    def replay(self) -> dict[str, Any]:
        """The service has no replay route: replay its store with ``warrant replay``."""
        raise WarrantError(
            "the service does not replay over HTTP; run `warrant replay` on its store",
            "no_route",
            None,
        )

    def record(self, table: str, key: str) -> Optional[dict[str, Any]]:
        """The row with its revision (``GET /v1/records/{table}/{key}``), or None."""
        response = self._http.get(f"/v1/records/{quote(table, safe='')}/{quote(key, safe='')}")
        if response.status_code == 404:
            body = response.json()
            if body.get("error", {}).get("code") == "unknown_record":
                return None
        return self._answer(response)

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
        headers = {}
        if if_match is not None:
            headers["If-Match"] = f'"{if_match}"'
        if if_none_match:
            headers["If-None-Match"] = "*"
        path = f"/v1/records/{quote(table, safe='')}/{quote(key, safe='')}"
        return self._answer(self._http.put(path, json=value, headers=headers))

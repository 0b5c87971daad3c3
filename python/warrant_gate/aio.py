"""``AsyncGate`` and ``AsyncClient``: the same methods as ``Gate`` and ``Client``, awaited.

The embedded engine's work runs on a worker thread (``asyncio.to_thread``), never on the event
loop; the GIL is released there while the engine decides, so other tasks run meanwhile. The
client is httpx's ``AsyncClient``. Both raise what their synchronous twins raise.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal, Mapping, Optional, Union, overload

import httpx

from . import client as _c
from .gate import Gate


class AsyncGate:
    """A ``Gate`` whose calls are awaited: ``AsyncGate(contract, store)``, or ``AsyncGate(gate)``
    around one already open. ``async with`` closes its store."""

    def __init__(self, contract: Any, store: Any = None) -> None:
        self.gate = contract if isinstance(contract, Gate) and store is None else Gate(contract, store)

    def __repr__(self) -> str:
        return f"Async{self.gate!r}"

    async def __aenter__(self) -> "AsyncGate":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Closes the store."""
        await asyncio.to_thread(self.gate.close)

    async def turn(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return await asyncio.to_thread(self.gate.turn, request)

    async def turn_json(self, text: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.gate.turn_json, text)

    async def outbound(self, request: Mapping[str, Any], *, submit: bool = False) -> dict[str, Any]:
        return await asyncio.to_thread(self.gate.outbound, request, submit=submit)

    async def effect_outcome(
        self, effect: str, outcome: str, rows: Optional[list[dict[str, Any]]] = None, *, result: Any = None
    ) -> dict[str, Any]:
        return await asyncio.to_thread(self.gate.effect_outcome, effect, outcome, rows, result=result)

    async def effect(self, effect: str) -> Optional[dict[str, Any]]:
        return await asyncio.to_thread(self.gate.effect, effect)

    async def replay(self) -> dict[str, Any]:
        return await asyncio.to_thread(self.gate.replay)

    async def render(self, text: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.gate.render, text)

    async def tools(self, format: str = "mcp") -> Any:
        return await asyncio.to_thread(self.gate.tools, format)

    async def record(self, table: str, key: str) -> Optional[dict[str, Any]]:
        return await asyncio.to_thread(self.gate.record, table, key)

    async def put_record(
        self, table: str, key: str, value: Any, *, if_match: Optional[int] = None, if_none_match: bool = False
    ) -> dict[str, Any]:
        return await asyncio.to_thread(
            self.gate.put_record, table, key, value, if_match=if_match, if_none_match=if_none_match
        )


class AsyncClient:
    """``Client`` over httpx's ``AsyncClient``: ``async with AsyncClient(url, key) as gate``."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        transport: Optional[httpx.AsyncBaseTransport] = None,
    ) -> None:
        self._http = httpx.AsyncClient(**_c._client_args(base_url, api_key, timeout), transport=transport)

    def __repr__(self) -> str:
        return f"AsyncClient({str(self._http.base_url)!r})"

    async def close(self) -> None:
        """Closes the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _run(self, call: _c._Call) -> Any:
        response = await self._http.request(
            call.method, call.path, content=call.body, headers=call.headers, params=call.params
        )
        return _c._answer(call, response)

    async def turn(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return await self._run(_c._turn(request))  # type: ignore[no-any-return]

    async def turn_json(self, text: str) -> dict[str, Any]:
        return await self._run(_c._turn_json(text))  # type: ignore[no-any-return]

    async def outbound(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return await self._run(_c._outbound(request))  # type: ignore[no-any-return]

    async def effect_outcome(
        self, effect: str, outcome: str, rows: Optional[list[dict[str, Any]]] = None, *, result: Any = None
    ) -> dict[str, Any]:
        return await self._run(_c._effect_outcome(effect, outcome, rows, result))  # type: ignore[no-any-return]

    async def effect(self, effect: str) -> Optional[dict[str, Any]]:
        return await self._run(_c._effect(effect))  # type: ignore[no-any-return]

    async def replay(self) -> dict[str, Any]:
        raise _c._no_replay()

    async def render(self, text: str) -> dict[str, Any]:
        return await self._run(_c._render(text))  # type: ignore[no-any-return]

    @overload
    async def tools(self, format: Literal["mcp"] = "mcp") -> dict[str, Any]: ...
    @overload
    async def tools(self, format: Literal["openai", "anthropic"]) -> list[dict[str, Any]]: ...
    async def tools(self, format: str = "mcp") -> Union[dict[str, Any], list[dict[str, Any]]]:
        return await self._run(_c._tools(format))  # type: ignore[no-any-return]

    async def record(self, table: str, key: str) -> Optional[dict[str, Any]]:
        return await self._run(_c._record(table, key))  # type: ignore[no-any-return]

    async def put_record(
        self, table: str, key: str, value: Any, *, if_match: Optional[int] = None, if_none_match: bool = False
    ) -> dict[str, Any]:
        return await self._run(_c._put_record(table, key, value, if_match, if_none_match))  # type: ignore[no-any-return]

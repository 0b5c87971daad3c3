"""AsyncGate and AsyncClient: the same answers and the same errors as Gate and Client, awaited;
the engine's work runs off the event loop (another task runs while a turn is decided)."""

from __future__ import annotations

import asyncio
import pathlib
from typing import Any

import pytest

from conftest import RETAIL, Served, cancel, confirm
from warrant_gate import AsyncClient, AsyncGate, Gate, RequestError


def test_async_gate_answers_what_gate_answers(tmp_path: pathlib.Path) -> None:
    async def run() -> tuple[Any, Any, list[str]]:
        ticks: list[str] = []

        async def ticker() -> None:
            for _ in range(1000):
                ticks.append("tick")
                await asyncio.sleep(0)

        async with AsyncGate(RETAIL, f"sqlite:{tmp_path / 'a.sqlite'}") as gate:
            held, _ = await asyncio.gather(gate.turn(cancel("c")), ticker())
            done = await gate.turn(confirm("c", held["interactions"][0]["id"]))
            with pytest.raises(RequestError) as raised:
                await gate.turn([])  # type: ignore[arg-type]
            assert raised.value.field == "request"
        return held, done, ticks

    held, done, ticks = asyncio.run(run())
    with Gate(RETAIL, f"sqlite:{tmp_path / 'b.sqlite'}") as gate:
        assert held == gate.turn(cancel("c"))
        assert done == gate.turn(confirm("c", held["interactions"][0]["id"]))
    assert len(ticks) == 1000


def test_async_client_answers_what_client_answers(served: Served, sqlite_store: str) -> None:
    async def run() -> tuple[Any, Any, Any]:
        async with AsyncClient(served.url, served.key) as client:
            held = await client.turn(cancel("c"))
            tools = await client.tools("openai")
            with pytest.raises(RequestError) as raised:
                await client.turn({**cancel("d"), "acts": [{"op": "x", "args": {"s": {1}}}]})
            return held, tools, raised.value

    held, tools, error = asyncio.run(run())
    with Gate(RETAIL, sqlite_store) as gate:
        assert held["acts"] == gate.turn(cancel("c"))["acts"]
        assert tools == gate.tools("openai")
    assert (error.code, error.field) == ("invalid_input", "acts[0].args.s")

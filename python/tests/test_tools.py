"""Tool definitions from Python: `Gate.tools(format)` and `tools(contract, format)` hand out what
`warrant tools --format FORMAT` prints for the same contract, byte for byte as JSON."""

from __future__ import annotations

import json
import pathlib
import subprocess

import pytest

from conftest import RETAIL, ROOT, warrant_binary
from warrant_gate import Gate, RequestError, tools

FORMATS = ["openai", "anthropic", "mcp"]
CONTRACTS = sorted((ROOT / "examples").glob("*/contract.toml"))


def printed(contract: pathlib.Path, format: str) -> str:
    """What `warrant tools` prints for `contract` in `format`."""
    done = subprocess.run(
        [warrant_binary(), "tools", "--contract", contract, "--format", format],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def as_printed(definitions: object) -> str:
    """The definitions as the CLI prints JSON: two-space indent, keys in their order, UTF-8."""
    return json.dumps(definitions, indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("format", FORMATS)
def test_the_gate_hands_out_what_warrant_tools_prints(format: str, sqlite_store: str) -> None:
    definitions = Gate(RETAIL, sqlite_store).tools(format)
    text = printed(RETAIL, format)
    assert definitions == json.loads(text)
    assert as_printed(definitions) == text
    listed = definitions["tools"] if format == "mcp" else definitions
    names = [d["function"]["name"] if format == "openai" else d["name"] for d in listed]
    assert "cancel_pending_order" in names, names


@pytest.mark.parametrize("contract", CONTRACTS, ids=lambda c: c.parent.name)
def test_every_example_contract_s_tools_match_without_a_store(contract: pathlib.Path) -> None:
    for format in FORMATS:
        text = printed(contract, format)
        assert as_printed(tools(contract, format)) == text, (contract, format)
        assert tools(str(contract), format) == json.loads(text)


def test_the_default_format_is_mcp_as_for_the_cli(sqlite_store: str) -> None:
    mcp = tools(RETAIL, "mcp")
    assert tools(RETAIL) == mcp
    assert Gate(RETAIL, sqlite_store).tools() == mcp
    annotations = {t["name"]: t["annotations"]["readOnlyHint"] for t in mcp["tools"]}
    assert annotations["cancel_pending_order"] is False


def test_a_format_or_contract_that_is_not_one_raises_naming_it(tmp_path: pathlib.Path, sqlite_store: str) -> None:
    with pytest.raises(RequestError) as raised:
        Gate(RETAIL, sqlite_store).tools("gemini")  # type: ignore[call-overload]
    assert (raised.value.code, raised.value.field) == ("invalid_input", "format")
    assert "gemini" in raised.value.message
    with pytest.raises(RequestError) as raised:
        tools(RETAIL, "OpenAI")  # type: ignore[call-overload]
    assert (raised.value.code, raised.value.field) == ("invalid_input", "format")
    with pytest.raises(RequestError) as raised:
        tools(tmp_path / "missing.toml", "mcp")
    assert (raised.value.code, raised.value.field) == ("invalid_input", "contract")

"""Type stubs of the native module: the gate embedded in this process."""

from os import PathLike
from typing import Any, Literal, Mapping, Optional, Union, overload

__version__: str
MAX_DEPTH: int
MAX_BODY: int
MAX_RESULT: int

def render(text: str) -> dict[str, Any]:
    """The numbered rendering of ``text`` (``warrant render``); no contract or store."""

def wire_json(value: Any, field: str = "request", object: bool = True) -> str:
    """``value`` as the JSON text the gate reads, or the gate's ``RequestError``."""

def check_json(text: str, field: str = "acts[0].args") -> str:
    """``text`` if it is one JSON object read as strictly as the CLI reads a request."""

def cli(args: list[str]) -> int:
    """Runs the ``warrant`` command line on ``args`` (the program's name first) as the binary
    does, in this process; returns its exit status."""

@overload
def tools(contract: Union[str, PathLike[str]], format: Literal["mcp"] = "mcp") -> dict[str, Any]:
    """The contract file's tool definitions, as ``warrant tools --format mcp`` prints them:
    ``{"tools": [{name, description, inputSchema, annotations}, ...]}``. No store is opened."""

@overload
def tools(contract: Union[str, PathLike[str]], format: Literal["openai", "anthropic"]) -> list[dict[str, Any]]:
    """The contract file's tool definitions for OpenAI (``[{type, function}]``) or Anthropic
    (``[{name, description, input_schema}]``), as ``warrant tools --format FORMAT`` prints them."""

class Gate:
    """A contract over a store (``sqlite:PATH`` or ``postgres://…[?schema=NAME]``).

    Safe to share across threads; the GIL is released while the engine decides.
    """

    def __init__(self, contract: Union[str, PathLike[str]], store: str) -> None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def turn(self, request: Mapping[str, Any]) -> dict[str, Any]: ...
    def turn_json(self, text: str) -> dict[str, Any]: ...
    def outbound(self, request: Mapping[str, Any], *, submit: bool = False) -> dict[str, Any]: ...
    def effect_outcome(
        self, effect: str, outcome: str, rows: Optional[list[dict[str, Any]]] = None, *, result: Any = None
    ) -> dict[str, Any]: ...
    def effect(self, effect: str) -> Optional[dict[str, Any]]: ...
    def replay(self) -> dict[str, Any]: ...
    def render(self, text: str) -> dict[str, Any]: ...
    @overload
    def tools(self, format: Literal["mcp"] = "mcp") -> dict[str, Any]:
        """The contract's tool definitions as an MCP ``tools/list`` result, as
        ``warrant tools --format mcp`` prints them."""
    @overload
    def tools(self, format: Literal["openai", "anthropic"]) -> list[dict[str, Any]]:
        """The contract's tool definitions for OpenAI or Anthropic function calling, as
        ``warrant tools --format FORMAT`` prints them."""
    def record(self, table: str, key: str) -> Optional[dict[str, Any]]: ...
    def put_record(
        self,
        table: str,
        key: str,
        value: Any,
        *,
        if_match: Optional[int] = None,
        if_none_match: bool = False,
    ) -> dict[str, Any]: ...

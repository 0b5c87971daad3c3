"""Type stubs of the native module: the gate embedded in this process."""

from os import PathLike
from typing import Any, Optional, Union

__version__: str

class Gate:
    """A contract over a store (``sqlite:PATH`` or ``postgres://…[?schema=NAME]``).

    Safe to share across threads; the GIL is released while the engine decides.
    """

    def __init__(self, contract: Union[str, PathLike[str]], store: str) -> None: ...
    def turn(self, request: dict[str, Any]) -> dict[str, Any]: ...
    def outbound(self, request: dict[str, Any], *, submit: bool = False) -> dict[str, Any]: ...
    def effect_outcome(
        self, effect: str, outcome: str, rows: Optional[list[dict[str, Any]]] = None
    ) -> dict[str, Any]: ...
    def replay(self) -> dict[str, Any]: ...
    def render(self, text: str) -> dict[str, Any]: ...
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

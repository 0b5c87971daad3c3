"""The embedded gate: the native engine, closed as a context manager or when the process exits."""

from __future__ import annotations

import atexit
import pathlib
import weakref
from typing import Any

from . import _native
from ._errors import RequestError

# Every gate still open, closed at exit so that a SQLite store is left whole (its log copied
# into the file) even when the program never closes it.
_open: "weakref.WeakSet[Gate]" = weakref.WeakSet()


class Gate(_native.Gate):
    """A contract over a store (``sqlite:PATH`` or ``postgres://…[?schema=NAME]``).

    Safe to share across threads; the GIL is released while the engine decides. ``with
    Gate(...) as gate:`` closes the store at the end of the block; ``close()`` does it by hand.
    """

    def __init__(self, contract: Any, store: Any) -> None:
        _open.add(self)

    def __enter__(self) -> "Gate":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@atexit.register
def _close_all() -> None:
    for gate in list(_open):
        try:
            gate.close()
        except Exception:  # noqa: BLE001 - at exit there is no one left to tell
            pass


def example(name: str = "retail") -> pathlib.Path:
    """The contract file of an example bundled with the package (``retail``)."""
    path = pathlib.Path(__file__).resolve().parent / "examples" / name / "contract.toml"
    if not path.is_file():
        raise RequestError(f"`name` is {name!r}: the bundled example is `retail`", "invalid_input", "name")
    return path

"""The checks both gates make of plain arguments, so that a wrong one is the same error from each."""

from __future__ import annotations

from typing import Any

from ._errors import RequestError


def text(value: Any, field: str) -> str:
    """A ``str`` argument, refused as ``Gate`` refuses it: another type, a lone surrogate, U+0000."""
    if not isinstance(value, str):
        raise RequestError(f"`{field}` is of type {type(value).__name__}: give a str", "invalid_input", field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise RequestError(
            f"`{field}` is not UTF-8 text (it holds a lone surrogate)", "invalid_input", field
        ) from None
    if "\0" in value:
        raise RequestError(f"`{field}` holds U+0000, which no store keeps", "invalid_input", field)
    return value

"""The exceptions of warrant_gate, raised alike by the embedded Gate and by the HTTP Client.

Every one carries the stable reason code (the list ``warrant reasons`` prints), the field at
fault where there is one, and the message.
"""

from __future__ import annotations

from typing import Optional


class WarrantError(Exception):
    """Something warrant refused or could not do; nothing was committed."""

    def __init__(
        self, message: str, code: str, field: Optional[str] = None, status: Optional[int] = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.field = field
        self.status = status  # the HTTP status, from the Client; None when embedded

    def __str__(self) -> str:
        where = f" ({self.field})" if self.field else ""
        return f"{self.code}{where}: {self.message}"


class RequestError(WarrantError):
    """The request was refused whole: bad input, an unknown operation, a turn key reused."""


class RecordError(WarrantError):
    """A records read or write: unknown table or row, a row that does not fit, a stale revision."""


class UnknownEffectError(WarrantError):
    """An outcome was reported for an effect the store does not hold."""


class AuthError(WarrantError):
    """The service did not accept the key (Client only)."""


class ServiceError(WarrantError):
    """The engine or the service failed (store, contention, internal); try again later."""


_BY_CODE = {
    "unknown_table": RecordError,
    "unknown_record": RecordError,
    "invalid_record": RecordError,
    "stale_revision": RecordError,
    "unknown_effect": UnknownEffectError,
    "unauthorized": AuthError,
    "contention": ServiceError,
    "internal": ServiceError,
}


def error_for(
    message: str, code: str, field: Optional[str] = None, status: Optional[int] = None
) -> WarrantError:
    """The exception for a reason code: the embedded gate and the Client both make theirs here."""
    cls = _BY_CODE.get(code, RequestError)
    # The service names the request as a whole with an empty field; the gate with None.
    return cls(message, code, field or None, status)

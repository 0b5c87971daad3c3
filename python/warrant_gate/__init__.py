"""warrant from Python: the gate embedded in this process (``Gate``) or served (``Client``).

Requests and answers are warrant's wire JSON as dicts; refusals are exceptions carrying the
stable reason code and the field at fault. ``tools(contract, format)`` and
``Gate.tools(format)`` hand out the contract's tool definitions as ``warrant tools`` prints them.
Adapters: ``warrant_gate.openai_agents`` and ``warrant_gate.langgraph`` (their frameworks are
optional extras).
"""

from ._errors import (
    AuthError,
    RecordError,
    RequestError,
    ServiceError,
    UnknownEffectError,
    WarrantError,
    error_for,
)
from ._native import Gate, __version__, tools
from .client import Client

__all__ = [
    "AuthError",
    "Client",
    "Gate",
    "RecordError",
    "RequestError",
    "ServiceError",
    "UnknownEffectError",
    "WarrantError",
    "__version__",
    "error_for",
    "tools",
]

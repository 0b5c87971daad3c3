"""warrant from Python: the gate embedded in this process (``Gate``) or served (``Client``).

Requests and answers are warrant's wire JSON as dicts (typed in ``warrant_gate.types``);
refusals are exceptions carrying the stable reason code and the field at fault, the same class
from ``Gate`` and ``Client`` for the same fault. ``AsyncGate`` and ``AsyncClient`` have the same
methods, awaited. ``tools(contract, format)`` and ``Gate.tools(format)`` hand out the
contract's tool definitions as ``warrant tools`` prints them; ``render(text)`` numbers a text's
words as a pointer counts them, with no store. ``example("retail")`` is the path of the
contract bundled with the package. Adapters: ``warrant_gate.openai_agents`` and
``warrant_gate.langgraph`` (their frameworks are optional extras).
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
from ._native import MAX_BODY, MAX_DEPTH, MAX_RESULT, __version__, render, tools
from .aio import AsyncClient, AsyncGate
from .client import Client
from .gate import Gate, example

__all__ = [
    "MAX_BODY",
    "MAX_DEPTH",
    "MAX_RESULT",
    "AsyncClient",
    "AsyncGate",
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
    "example",
    "render",
    "tools",
]

"""The ``warrant`` console script: the command line of the native module (``_native.cli``, the
binary's own code), with this process's arguments; it exits with the command's status."""

from __future__ import annotations

import signal
import sys
from typing import NoReturn, Optional, Sequence

from . import _native


def main(argv: Optional[Sequence[str]] = None) -> NoReturn:
    """Runs ``warrant`` with ``argv`` (default ``sys.argv``, the program's name first)."""
    args = list(sys.argv if argv is None else argv)
    # The command writes to the process's file descriptors: what Python buffered goes first.
    sys.stdout.flush()
    sys.stderr.flush()
    # As for the binary, SIGINT ends the process until the command puts its own handler in place
    # (the commands that open a store do, to close it first): Python's handler would only set a
    # flag that nothing reads while the command runs, and the command would not stop.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(_native.cli(["warrant", *args[1:]]))


if __name__ == "__main__":
    main()

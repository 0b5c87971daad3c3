"""Shared fixtures: the repository's paths, fresh stores, and a real `warrant serve` process."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import uuid
from typing import Iterator

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RETAIL = ROOT / "examples" / "retail" / "contract.toml"
POSTGRES = os.environ.get("WARRANT_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")
BASE = {
    "actor": "yusuf_rossi_9620",
    "at": "2026-11-29T15:00:00Z",
    "time_zone": "America/New_York",
    "locale": "en-US",
}
CANCEL = {"op": "cancel_pending_order", "args": {"order_id": "#W6247578", "reason": "no longer needed"}}


def cancel(conversation: str, turn: str = "hold") -> dict:
    """A turn that proposes cancelling the customer's pending order."""
    return {
        **BASE,
        "conversation": conversation,
        "turn": turn,
        "entries": [{"kind": "user", "text": "Cancel it please."}],
        "acts": [CANCEL],
    }


def confirm(conversation: str, interaction: str, turn: str = "yes") -> dict:
    """The customer's answer to a held act: confirm."""
    return {
        **BASE,
        "conversation": conversation,
        "turn": turn,
        "answers": [{"interaction": interaction, "option": "confirm"}],
    }


def warrant_binary() -> pathlib.Path:
    """The `warrant` binary `cargo test --workspace` builds (WARRANT_BIN overrides)."""
    if "WARRANT_BIN" in os.environ:
        return pathlib.Path(os.environ["WARRANT_BIN"])
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "debug" / "warrant"


@pytest.fixture
def sqlite_store(tmp_path: pathlib.Path) -> str:
    return f"sqlite:{tmp_path / 'warrant.sqlite'}"


@pytest.fixture
def postgres_store() -> Iterator[str]:
    """A PostgreSQL schema of its own, dropped afterwards (psql from the machine)."""
    schema = f"py_{uuid.uuid4().hex[:12]}"
    yield f"{POSTGRES}?schema={schema}"
    if shutil.which("psql"):
        subprocess.run(
            ["psql", POSTGRES, "-q", "-c", f"DROP SCHEMA IF EXISTS {schema} CASCADE"],
            check=False,
            capture_output=True,
        )


class Served:
    """A `warrant serve` process on 127.0.0.1 with one tenant, killed at the end."""

    def __init__(self, folder: pathlib.Path, contract: pathlib.Path = RETAIL) -> None:
        binary = warrant_binary()
        if not binary.exists():
            raise RuntimeError(f"{binary} is missing: run `cargo build -p warrant-cli` first")
        store = f"sqlite:{folder}"
        added = subprocess.run(
            [binary, "tenant", "add", "acme", "--store", store],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        self.key = added.stdout.strip()
        self.process = subprocess.Popen(
            [binary, "serve", "--contract", contract, "--store", store, "--listen", "127.0.0.1:0"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        prefix = "listening on "
        if not line.startswith(prefix):
            self.close()
            raise RuntimeError(f"warrant serve said {line!r}")
        self.url = line[len(prefix):]

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


@pytest.fixture
def served(tmp_path: pathlib.Path) -> Iterator[Served]:
    server = Served(tmp_path / "tenants")
    yield server
    server.close()

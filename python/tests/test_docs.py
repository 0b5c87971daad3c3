"""Every Python block of docs/python.md and of the package's README runs as written, each in a
fresh directory of its own with the `warrant` binary on the path, and the blocks pass
`mypy --strict` against the package's types; the page's shell block installs from ./python,
as scripts/python-tests.sh does."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import ROOT, warrant_binary

PAGES = [ROOT / "docs" / "python.md", ROOT / "python" / "README.md"]


def blocks(page: pathlib.Path, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", page.read_text(), flags=re.S | re.M)


PYTHON = [(page.name, i, body) for page in PAGES for i, body in enumerate(blocks(page, "python"))]


def test_the_pages_have_the_blocks_counted() -> None:
    assert [len(blocks(page, "python")) for page in PAGES] == [8, 1]
    # The one shell block installs the package from ./python, which this suite's script does.
    (install,) = blocks(PAGES[0], "sh")
    assert "pip install ./python" in install


@pytest.mark.parametrize("page,index,body", PYTHON, ids=[f"{p}#{i}" for p, i, _ in PYTHON])
def test_a_python_block_runs_as_written_from_a_fresh_directory(
    page: str, index: int, body: str, tmp_path: pathlib.Path
) -> None:
    script = tmp_path / "block.py"
    script.write_text(body)
    binary = warrant_binary()
    assert binary.exists(), f"{binary} is missing: scripts/python-tests.sh builds it"
    env = {**os.environ, "PATH": f"{binary.parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, (page, index, done.stderr)
    assert done.stdout.strip(), (page, index, "printed nothing")


def test_the_blocks_pass_mypy_strict(tmp_path: pathlib.Path) -> None:
    # mypy is pinned in requirements-test.txt; the Python 3.9 environment runs without it.
    pytest.importorskip("mypy")
    for page, index, body in PYTHON:
        (tmp_path / f"{page.replace('.', '_')}_{index}.py").write_text(body)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr

"""The wheel's `warrant` console script runs the command line of the native module: the same
output and exit status as the `warrant` binary, command by command."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time
from typing import Optional

import pytest

from conftest import BASE, CANCEL, warrant_binary
from warrant_gate import example

# The console script pip put beside this interpreter (a virtual environment's bin/).
SCRIPT = pathlib.Path(sys.executable).parent / "warrant"


def both(args: list[str], stdin: Optional[str] = None, cwd: Optional[pathlib.Path] = None) -> list[tuple[int, str, str]]:
    """What the console script and then the binary answer to `args`: status, stdout, stderr."""
    binary = warrant_binary()
    if not SCRIPT.is_file():
        raise RuntimeError(f"{SCRIPT} is missing: the wheel installs a `warrant` console script")
    if not binary.is_file():
        raise RuntimeError(f"{binary} is missing: run `cargo test --workspace --no-run` first")
    answers = []
    for program in (SCRIPT, binary):
        done = subprocess.run(
            [str(program), *args], input=stdin, capture_output=True, text=True, cwd=cwd, timeout=120
        )
        answers.append((done.returncode, done.stdout, done.stderr))
    return answers


def test_the_console_script_is_the_native_module_not_a_binary() -> None:
    # A Python script (its first line names the interpreter) that imports the module's entry.
    text = SCRIPT.read_text()
    assert text.startswith("#!") and "warrant_gate._cli" in text


@pytest.mark.parametrize(
    "args",
    [["--version"], ["--help"], ["turn", "--help"], ["reasons"], ["nosuch"], ["check"]],
    ids=["version", "help", "turn-help", "reasons", "unknown-command", "missing-argument"],
)
def test_what_needs_no_files_is_answered_as_the_binary_answers(args: list[str]) -> None:
    script, binary = both(args)
    assert script == binary
    assert script[0] == (0 if args[0] in ("--version", "--help", "turn", "reasons") else 2)


def test_check_on_the_bundled_example_is_the_binary_s(tmp_path: pathlib.Path) -> None:
    contract = example("retail")
    script, binary = both(["check", "--contract", str(contract)])
    assert script == binary
    assert script[0] == 0 and "2141 rows, every row checked" in script[1]
    # A contract that is not there: status 2 and the same one line on stderr.
    script, binary = both(["check", "--contract", str(tmp_path / "none.toml")])
    assert script == binary
    assert script[0] == 2 and script[2].startswith("warrant: ") and script[2].count("\n") == 1


def test_a_turn_and_its_answer_are_the_binary_s(tmp_path: pathlib.Path) -> None:
    request = json.dumps({**BASE, "conversation": "cli", "turn": "t1", "entries": [], "acts": [CANCEL]})
    stores = []
    answers = []
    for name in ("script", "binary"):
        # Each program on a fresh store of its own: the same request, the same answer.
        store = f"sqlite:{tmp_path / name}.sqlite"
        stores.append(store)
        program = SCRIPT if name == "script" else warrant_binary()
        done = subprocess.run(
            [str(program), "turn", "--contract", str(example("retail")), "--store", store],
            input=request, capture_output=True, text=True, timeout=120,
        )
        answers.append((done.returncode, done.stdout, done.stderr))
    assert answers[0] == answers[1]
    assert answers[0][0] == 0
    assert json.loads(answers[0][1])["acts"][0]["verdict"] == "hold"
    # The script's store was closed whole: the binary replays its turn to the same verdict.
    replayed = subprocess.run(
        [str(warrant_binary()), "replay", "--contract", str(example("retail")), "--store", stores[0]],
        capture_output=True, text=True, timeout=120,
    )
    assert replayed.returncode == 0, replayed.stderr


def test_a_reader_that_stops_early_ends_the_script_quietly() -> None:
    # `warrant reasons | head -1`: standard output closed after one line, status 0, no panic.
    statuses = []
    for program in (SCRIPT, warrant_binary()):
        reader = subprocess.Popen(["head", "-c", "1"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        done = subprocess.run([str(program), "reasons"], stdout=reader.stdin, stderr=subprocess.PIPE, timeout=120)
        assert reader.stdin is not None
        reader.stdin.close()
        reader.wait(timeout=60)
        statuses.append((done.returncode, done.stderr))
    assert statuses[0] == statuses[1] == (0, b"")


def test_main_takes_the_arguments_it_is_given(capfd: pytest.CaptureFixture[str]) -> None:
    from warrant_gate._cli import main

    with pytest.raises(SystemExit) as ended:
        main(["warrant", "--version"])
    assert ended.value.code == 0
    assert capfd.readouterr().out.startswith("warrant ")


def test_the_environment_reaches_the_command(tmp_path: pathlib.Path) -> None:
    # The script runs in this process's environment, as the binary does: a traces endpoint that
    # is not a URL is refused by both, status 2, before any store is opened.
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": "not a url"}
    answers = []
    for program in (SCRIPT, warrant_binary()):
        done = subprocess.run(
            [str(program), "turn", "--contract", str(example("retail")), "--store", f"sqlite:{tmp_path}/x.sqlite"],
            input="{}", capture_output=True, text=True, env=env, timeout=120,
        )
        answers.append((done.returncode, done.stdout, done.stderr))
    assert answers[0] == answers[1]
    assert answers[0][0] == 2


def cli_thread_started(pid: int) -> bool:
    """Whether the script's process runs the command: its thread named `main` exists."""
    tasks = pathlib.Path(f"/proc/{pid}/task")
    return any((task / "comm").read_text().strip() == "main" for task in tasks.iterdir() if (task / "comm").exists())


def test_sigint_ends_a_command_without_handlers_as_it_ends_the_binary() -> None:
    # `warrant render` waiting for its text on standard input (kept open) puts no handler in
    # place: SIGINT ends it by the default action (-2). The script is sent it once the command
    # runs; Python's own handler, left in place, would swallow it and the script wait for ever.
    statuses = []
    for program in (SCRIPT, warrant_binary()):
        process = subprocess.Popen([str(program), "render"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        if program == SCRIPT:
            deadline = time.monotonic() + 60
            while not cli_thread_started(process.pid):
                assert time.monotonic() < deadline, "the script never started the command's thread"
                time.sleep(0.01)
        process.send_signal(signal.SIGINT)
        try:
            statuses.append(process.wait(timeout=60))
        finally:
            process.kill()
            process.communicate()
    assert statuses == [-signal.SIGINT, -signal.SIGINT]

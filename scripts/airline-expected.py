#!/usr/bin/env python3
"""Records what examples/airline's conformance test compares against, from a copy of τ-bench's
airline domain (its data, `tasks_test.py` and `tools/`), given as the one argument.

It writes, beside the contract's data:
- `tasks_test.json`: each test task's user and expected actions (names and arguments only);
- `expected_effects.json`: for each task, each write action run by the benchmark's own tool code
  on a fresh copy of the data, in order: what the tool answered and every row it left changed.

Run once; the project's tests read the files it wrote, never the benchmark.
"""

import copy
import importlib.util
import json
import pathlib
import sys
import types

WRITES = {
    "book_reservation": "BookReservation",
    "cancel_reservation": "CancelReservation",
    "update_reservation_baggages": "UpdateReservationBaggages",
    "update_reservation_flights": "UpdateReservationFlights",
    "update_reservation_passengers": "UpdateReservationPassengers",
    "send_certificate": "SendCertificate",
}


def stub_tau_bench():
    """The two names the task list and the tools import, as plain records."""

    class Action:
        def __init__(self, name, kwargs):
            self.name, self.kwargs = name, kwargs

    class Task:
        def __init__(self, user_id, actions, **_):
            self.user_id, self.actions = user_id, actions

    class Tool:
        pass

    for name in ["tau_bench", "tau_bench.types", "tau_bench.envs", "tau_bench.envs.tool"]:
        sys.modules[name] = types.ModuleType(name)
    sys.modules["tau_bench.types"].Action = Action
    sys.modules["tau_bench.types"].Task = Task
    sys.modules["tau_bench.envs.tool"].Tool = Tool


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def changed(before, after):
    rows = {}
    for table in after:
        for key, row in after[table].items():
            if before[table].get(key) != row:
                # A copy: the tool goes on changing the same objects in later writes.
                rows.setdefault(table, {})[key] = copy.deepcopy(row)
    return rows


def main(source):
    stub_tau_bench()
    tasks = load(source / "tasks_test.py", "tasks_test").TASKS
    data = {t: json.loads((source / "data" / f"{t}.json").read_text()) for t in ["flights", "reservations", "users"]}
    tools = {
        name: getattr(load(source / "tools" / f"{name}.py", name), cls) for name, cls in WRITES.items()
    }
    out = pathlib.Path(__file__).resolve().parent.parent / "examples" / "airline" / "data"
    listed, effects = [], []
    for task in tasks:
        actions = [{"name": a.name, "kwargs": a.kwargs} for a in task.actions]
        listed.append({"user_id": task.user_id, "actions": actions})
        state = copy.deepcopy(data)
        ran = []
        for i, action in enumerate(task.actions):
            if action.name not in tools:
                continue
            before = copy.deepcopy(state)
            answer = tools[action.name].invoke(state, **action.kwargs)
            ok = not answer.startswith("Error")
            ran.append({"action": i, "name": action.name, "ok": ok, "answer": answer if not ok else None,
                        "rows": changed(before, state)})
        effects.append({"user_id": task.user_id, "writes": ran})
    (out / "tasks_test.json").write_text(json.dumps(listed, indent=1, ensure_ascii=False) + "\n")
    (out / "expected_effects.json").write_text(json.dumps(effects, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))

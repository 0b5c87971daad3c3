"""The retail conformance counts through Python: every τ-bench test write held, confirmed,
executed and reported through the embedded gate, and every mutation named by its broken rule;
the same counts as crates/warrant-engine/tests/it/retail.rs."""

from __future__ import annotations

import importlib.util
import sys

from conftest import ROOT


def load_example():  # type: ignore[no-untyped-def]
    path = ROOT / "examples" / "python" / "retail_executor.py"
    spec = importlib.util.spec_from_file_location("retail_executor", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["retail_executor"] = module
    spec.loader.exec_module(module)
    return module


def test_every_retail_write_commits_and_each_broken_precondition_is_refused() -> None:
    retail = load_example()
    lines: list[str] = []
    counts = retail.run(say=lines.append)
    print("\n".join(retail.summary(counts)))
    assert counts.failures == []
    assert (counts.committed, counts.writes) == (174, 174)
    assert counts.reported == 174, "every executed effect's outcome is recorded"
    assert counts.refused_as_in_the_benchmark == 4
    assert counts.mutation_totals() == (1274, 1274)
    # Every kind of mutation the executor makes was tried at least once (15 kinds).
    assert len(counts.mutations) == 15
    assert all(tried > 0 for tried, _ in counts.mutations.values())
    assert lines, "each task with writes says what happened"

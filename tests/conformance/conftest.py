"""OpInfo conformance: makes the harness importable and prints the pass rate at the end.

Set ``OPENREG_OPINFO_SUMMARY=path.json`` to also write the figures (and per-op counts).
"""

from __future__ import annotations

import collections
import json
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

_RESULTS = pytest.StashKey[dict]()


def pytest_configure(config):
    config.stash[_RESULTS] = {}


@pytest.fixture
def opinfo_record(request):
    """Record the outcomes of one op's checks for the session summary."""
    results = request.config.stash[_RESULTS]

    def record(name: str, outcomes) -> None:
        counts = results.setdefault(name, collections.Counter())
        for outcome in outcomes:
            counts[f"{outcome.check}:{outcome.status}"] += 1

    return record


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    results = config.stash.get(_RESULTS, {})
    if not results:
        return
    import opinfo_harness as harness

    # Keys are op names, or "name:dtype" for the other dtypes: an op passes when all of
    # its dtypes do.
    passed = failed = 0
    op_status: dict[str, bool] = {}
    for key, counts in results.items():
        op_passed = sum(v for k, v in counts.items() if k.endswith(":pass"))
        op_failed = sum(v for k, v in counts.items() if k.endswith(":fail"))
        passed, failed = passed + op_passed, failed + op_failed
        if op_passed or op_failed:
            name = key.split(":", 1)[0]
            op_status[name] = op_status.get(name, True) and op_failed == 0
    ops_attempted, ops_passing = len(op_status), sum(op_status.values())
    attempted = passed + failed
    rate = 100.0 * passed / attempted if attempted else 0.0
    selection = os.environ.get("OPENREG_OPINFO") or "subset"
    line = (f"OpInfo conformance ({harness.fallback_mode()} fallback, {selection}): "
            f"{ops_passing} of {ops_attempted} ops pass every sample, "
            f"{passed} of {attempted} samples ({rate:.2f}%)")
    terminalreporter.write_sep("=", "openreg OpInfo conformance")
    terminalreporter.write_line(line)
    path = os.environ.get("OPENREG_OPINFO_SUMMARY")
    if path:
        with open(path, "w") as handle:
            json.dump({"summary": line, "mode": harness.fallback_mode(), "selection": selection,
                       "ops_attempted": ops_attempted, "ops_fully_passing": ops_passing,
                       "samples_attempted": attempted, "samples_passed": passed,
                       "ops": {name: dict(counts) for name, counts in sorted(results.items())}},
                      handle, indent=1)

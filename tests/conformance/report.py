"""OpInfo conformance sweep with pass rates, crash-isolated.

    python tests/conformance/report.py                     # the full op_db, 2 worker processes
    python tests/conformance/report.py --ops subset        # the default CI subset
    python tests/conformance/report.py --ops abs,nn.functional.conv2d --jobs 1
    OPENREG_FALLBACK=copy python tests/conformance/report.py --json copy.json

Workers run ops one after the other and stream one JSON line per op. A worker that dies
(signal, abort) or exceeds --timeout on one op is restarted after that op, which is
recorded as "crash"/"timeout" with the tail of the worker's stderr. The summary counts

* samples: (sample, check) pairs whose CPU run succeeded; passed = same result on openreg;
* ops: ops with at least one attempted sample (or a crash); fully passing = no failure;
* conformance: failures not covered by expected_failures.toml, and entries that now pass.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MAX_MESSAGES = 3  # distinct failure messages kept per op and check


# ----------------------------------------------------------------------------------------
# Worker side


def worker(names: list[str], out) -> None:
    import torch  # noqa: F401  (autoloads openreg)

    import opinfo_harness as harness

    expectations = harness.load_expectations()
    ops = {op.full_name: op for op in harness.float32_ops()}
    mode = harness.fallback_mode()
    for name in names:
        out.write(json.dumps({"event": "start", "op": name}) + "\n")
        out.flush()
        entries = expectations.get(name, [])
        if any(e.kind == "skip" and e.applies(mode) and set(e.checks) == set(harness.CHECKS)
               for e in entries):
            record = {"event": "result", "op": name, "status": "skipped", "seconds": 0.0,
                      "counts": {}, "failures": []}
        else:
            skipped = {c for e in entries if e.kind == "skip" and e.applies(mode) for c in e.checks}
            checks = [c for c in harness.CHECKS if c not in skipped]
            try:
                outcomes, seconds = harness.check_op(ops[name], entries, checks, mode)
                status = "ok"
            except Exception as error:  # sample generation or the harness itself
                outcomes, seconds, status = [], 0.0, "error"
                first_line = str(error).splitlines()[0] if str(error) else ""
                error_text = f"{type(error).__name__}: {first_line}"
            counts = collections.Counter(f"{o.check}:{o.status}" for o in outcomes)
            failures, seen = [], set()
            per_check = collections.Counter()
            for outcome in outcomes:
                if outcome.status == "fail" and (outcome.check, outcome.message) not in seen:
                    seen.add((outcome.check, outcome.message))
                    per_check[outcome.check] += 1
                    if per_check[outcome.check] <= MAX_MESSAGES:
                        failures.append({"check": outcome.check, "sample": outcome.sample,
                                         "message": outcome.message})
            record = {"event": "result", "op": name, "status": status, "seconds": round(seconds, 3),
                      "counts": dict(counts), "failures": failures}
            if status == "error":
                record["failures"] = [{"check": "harness", "sample": -1, "message": error_text}]
        out.write(json.dumps(record) + "\n")
        out.flush()


def worker_main(names: list[str]) -> None:
    # Keep the JSON stream clean: anything else (warnings, C++ prints) goes to stderr.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    worker(names, out)


# ----------------------------------------------------------------------------------------
# Supervisor side


def run_worker_chain(names: list[str], timeout: float, results: dict, lock, verbose: bool) -> None:
    """Run ``names`` in workers, restarting after a crash or a timeout."""
    remaining = list(names)
    while remaining:
        with tempfile.TemporaryFile(mode="w+") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-X", "faulthandler", __file__, "--worker", ",".join(remaining)],
                stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=HERE.parent.parent,
            )
            lines: queue.Queue = queue.Queue()

            def pump():
                for line in process.stdout:
                    lines.put(line)
                lines.put(None)

            threading.Thread(target=pump, daemon=True).start()
            current, started = None, time.monotonic()
            failed = None
            while True:
                try:
                    line = lines.get(timeout=1.0)
                except queue.Empty:
                    if current is not None and time.monotonic() - started > timeout:
                        process.kill()
                        failed = "timeout"
                        while lines.get() is not None:
                            pass
                        break
                    continue
                if line is None:
                    break
                record = json.loads(line)
                if record["event"] == "start":
                    current, started = record["op"], time.monotonic()
                    continue
                current = None
                remaining.remove(record["op"])
                with lock:
                    results[record["op"]] = record
                if verbose:
                    print(f"{record['op']:45s} {record['status']:8s} {record['seconds']:7.2f}s "
                          f"{record['counts']}", flush=True)
            process.wait()
            if current is None:
                if process.returncode != 0 and remaining:
                    current = remaining[0]  # died before starting an op
                else:
                    continue
            stderr.seek(0)
            tail = [l for l in stderr.read().splitlines() if l.strip()][-12:]
            code = process.returncode
            status = failed or "crash"
            what = (f"killed after {timeout:.0f}s" if failed else
                    f"signal {-code}" if code < 0 else f"exit code {code}")
            message = f"{what}; stderr: " + " | ".join(tail)
            record = {"event": "result", "op": current, "status": status, "seconds": 0.0,
                      "counts": {},
                      "failures": [{"check": status, "sample": -1, "message": message}]}
            remaining.remove(current)
            with lock:
                results[current] = record
            if verbose:
                print(f"{current:45s} {status.upper():8s} {what}", flush=True)


def summarize(results: dict, expectations: dict, mode: str, checks) -> dict:
    per_check = {c: collections.Counter() for c in checks}
    ops_attempted = ops_passing = 0
    failing, unexpected, fixed = {}, [], []
    for name, record in sorted(results.items()):
        counts = record["counts"]
        for key, value in counts.items():
            check, status = key.split(":")
            per_check[check][status] += value
        fails = sum(v for k, v in counts.items() if k.endswith(":fail"))
        attempted = fails + sum(v for k, v in counts.items() if k.endswith(":pass"))
        broken = record["status"] in ("crash", "timeout", "error")
        if record["status"] == "skipped":
            continue
        if attempted or broken:
            ops_attempted += 1
            if not fails and not broken:
                ops_passing += 1
        failed_checks = {f["check"] for f in record["failures"]} if (fails or broken) else set()
        if failed_checks:
            failing[name] = record
        entries = [e for e in expectations.get(name, []) if e.applies(mode) and e.kind == "fail"]
        covered = {c for e in entries for c in e.checks}
        if failed_checks - covered and not (broken and entries):
            unexpected.append(name)
        if entries and not failed_checks:
            fixed.append(name)
    passed = sum(c["pass"] for c in per_check.values())
    attempted = passed + sum(c["fail"] for c in per_check.values())
    return {
        "mode": mode,
        "ops_in_selection": len(results),
        "ops_attempted": ops_attempted,
        "ops_fully_passing": ops_passing,
        "samples_attempted": attempted,
        "samples_passed": passed,
        "sample_pass_rate": round(100.0 * passed / attempted, 2) if attempted else None,
        "per_check": {c: dict(v) for c, v in per_check.items()},
        "ops_skipped_by_expectations": sorted(
            n for n, r in results.items() if r["status"] == "skipped"
        ),
        "failing_ops": sorted(failing),
        "unexpected_failures": unexpected,
        "expected_failures_now_passing": fixed,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--ops", default="full",
                        help="full (default), subset, or comma-separated op names")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per op")
    parser.add_argument("--json", help="write the results and summary here")
    parser.add_argument("-q", "--quiet", action="store_true")
    args = parser.parse_args()
    if args.worker is not None:
        worker_main([n for n in args.worker.split(",") if n])
        return 0

    import opinfo_harness as harness

    expectations = harness.load_expectations()
    names = [op.full_name for op in harness.select_ops(args.ops)]
    mode = harness.fallback_mode()
    results: dict = {}
    lock = threading.Lock()
    chains = [names[i::args.jobs] for i in range(args.jobs)]
    start = time.monotonic()
    threads = [threading.Thread(target=run_worker_chain,
                                args=(chain, args.timeout, results, lock, not args.quiet))
               for chain in chains if chain]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    summary = summarize(results, expectations, mode, harness.CHECKS)
    summary["wall_seconds"] = round(time.monotonic() - start, 1)

    print()
    print(f"OpInfo conformance ({mode} fallback, {args.ops}): "
          f"{summary['ops_fully_passing']} of {summary['ops_attempted']} ops pass fully, "
          f"{summary['samples_passed']} of {summary['samples_attempted']} samples "
          f"({summary['sample_pass_rate']}%)")
    for check, counts in summary["per_check"].items():
        print(f"  {check:8s} pass {counts.get('pass', 0):6d}  fail {counts.get('fail', 0):5d}  "
              f"not run on CPU/skipped {counts.get('skip', 0):5d}")
    for name in summary["failing_ops"]:
        record = results[name]
        first = record["failures"][0] if record["failures"] else {"check": "?", "message": ""}
        tag = " (UNEXPECTED)" if name in summary["unexpected_failures"] else ""
        print(f"  FAIL {name}{tag}: [{first['check']}] {first['message'][:200]}")
    if summary["expected_failures_now_passing"]:
        print("  listed as failing but pass now:",
              ", ".join(summary["expected_failures_now_passing"]))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"summary": summary, "ops": results}, handle, indent=1, sort_keys=True)
    return 1 if summary["unexpected_failures"] else 0


if __name__ == "__main__":
    sys.exit(main())

"""openreg-smi: the openreg devices and the processes using them, like nvidia-smi.

Every process that allocates openreg device memory publishes what it holds per device
(the runtime's orGetProcessUsage, openreg_runtime.process_usage); this lists them with
the devices this environment configures. The console script is installed by
openreg-torch; it lives here because it needs the runtime only, not torch, and so
starts at once.

    openreg-smi                  a table
    openreg-smi --json           the same as JSON, for scripts
    openreg-smi --watch [SECS]   refresh every SECS seconds (default 1) until Ctrl-C or
                                 --count refreshes
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from . import errors
from .device import device_count, get_device_properties, process_usage, runtime_version

__all__ = ["main", "query"]


def _command(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return " ".join(part.decode(errors="replace") for part in raw.split(b"\0") if part) or "?"


# DOC START: smi-query
def query() -> dict[str, Any]:
    """What openreg-smi shows, as a JSON-ready dictionary."""
    processes = process_usage()
    devices = []
    for index in range(device_count()):
        properties = get_device_properties(index)
        used = sum(p.used_bytes[index] for p in processes if index < len(p.used_bytes))
        devices.append({"index": index, "name": properties.name,
                        "total_memory": properties.total_memory,
                        "used_memory": used, "processes": sum(
                            1 for p in processes
                            if index < len(p.used_bytes) and p.used_bytes[index] > 0)})
    return {
        "runtime_version": runtime_version(),
        "devices": devices,
        "processes": [{"pid": p.pid, "command": _command(p.pid),
                       "device_memory": p.device_memory, "used_bytes": list(p.used_bytes),
                       "total_used": sum(p.used_bytes)} for p in processes],
    }
# DOC END: smi-query


def _size(count: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


def render(state: dict[str, Any]) -> str:
    """The table openreg-smi prints."""
    width = 78
    rule = "+" + "-" * (width - 2) + "+"

    def row(text: str) -> str:
        return "| " + text[:width - 4].ljust(width - 4) + " |"

    version = state["runtime_version"]
    lines = [time.strftime("%a %b %d %H:%M:%S %Y"), rule,
             row(f"openreg-smi    runtime {version // 1000}.{version % 1000 // 10}"), rule,
             row(f"{'Dev':>3}  {'Name':<28} {'Memory-Usage (all processes)':>30}  {'Procs':>5}"),
             rule]
    for device in state["devices"]:
        usage = f"{_size(device['used_memory'])} / {_size(device['total_memory'])}"
        lines.append(row(f"{device['index']:>3}  {device['name'][:28]:<28} {usage:>30}  "
                         f"{device['processes']:>5}"))
    lines += [rule, "", rule, row("Processes:"),
              row(f"{'PID':>8}  {'Dev':>3}  {'Used memory':>12}  Command"), rule]
    rows = [(p, index, used) for p in state["processes"]
            for index, used in enumerate(p["used_bytes"]) if used > 0]
    if not rows:
        lines.append(row("No process holds openreg device memory"))
    for process, index, used in rows:
        command = " ".join(process["command"].split())  # one line, whatever argv holds
        lines.append(row(f"{process['pid']:>8}  {index:>3}  {_size(used):>12}  {command}"))
    lines.append(rule)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="openreg-smi", description="Show openreg devices and the processes using them.")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("-l", "--watch", nargs="?", const=1.0, type=float, metavar="SECONDS",
                        help="refresh every SECONDS (default 1) until Ctrl-C")
    parser.add_argument("-c", "--count", type=int, metavar="N",
                        help="with --watch: stop after N refreshes")
    args = parser.parse_args(argv)
    if args.watch is not None and not 0.1 <= args.watch <= 3600:
        parser.error(f"--watch takes a refresh interval in [0.1, 3600] seconds, got {args.watch}")
    if args.count is not None and (args.count < 1 or args.watch is None):
        parser.error("--count takes a positive number of refreshes, with --watch")
    clear = sys.stdout.isatty() and not args.json
    shown = 0
    try:
        while True:
            state = query()
            text = json.dumps(state, indent=2) if args.json else render(state)
            print(("\x1b[H\x1b[2J" if clear else "") + text, flush=True)
            shown += 1
            if args.watch is None or (args.count is not None and shown >= args.count):
                return 0
            time.sleep(args.watch)
    except KeyboardInterrupt:
        return 0  # Ctrl-C ends --watch; no traceback
    except errors.OpenRegError as error:
        print(f"openreg-smi: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""Where a parallel test run's minutes went: per xdist worker, the files it ran in order
with their seconds, and the slowest tests.

    PYTEST_ADDOPTS="-v --junitxml=run.xml" make test > run.log
    python -m tools.test_timeline run.xml run.log

The JUnit file has each test's seconds (set-up and tear-down included); the verbose
log has which worker ran it (`[gw0] [ 12%] PASSED tests/...::name`).
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

_RAN = re.compile(r"^\[(gw\d+)\] \[ *\d+%\] \w+ (\S+?)::(\S+)")


def durations(junit: Path) -> dict[tuple[str, str], float]:
    """(file, test name) -> seconds."""
    found: dict[tuple[str, str], float] = {}
    for case in ET.parse(junit).iter("testcase"):
        module = (case.get("classname") or "").replace(".", "/") + ".py"
        found[(module, case.get("name") or "")] = float(case.get("time") or 0)
    return found


def workers(log: Path) -> dict[str, list[tuple[str, str]]]:
    """worker -> the (file, test name) it ran, in order."""
    ran: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for line in log.read_text(errors="replace").splitlines():
        if m := _RAN.match(line):
            ran[m.group(1)].append((m.group(2), m.group(3)))
    return ran


def main(junit: Path, log: Path, slowest: int = 20) -> None:
    seconds = durations(junit)
    for worker, tests in sorted(workers(log).items()):
        total = sum(seconds.get(t, 0.0) for t in tests)
        print(f"{worker}: {len(tests)} tests, {total / 60:.1f} min")
        files: list[tuple[str, float, int]] = []
        for file, name in tests:
            if files and files[-1][0] == file:
                _, s, n = files[-1]
                files[-1] = (file, s + seconds.get((file, name), 0.0), n + 1)
            else:
                files.append((file, seconds.get((file, name), 0.0), 1))
        for file, s, n in files:
            if s >= 10:
                print(f"  {s:6.0f} s  {n:4d}  {file}")
        rest = [f for f in files if f[1] < 10]
        print(f"  {sum(f[1] for f in rest):6.0f} s  {sum(f[2] for f in rest):4d}  (the rest)")
    print(f"\nslowest {slowest}:")
    for (file, name), s in sorted(seconds.items(), key=lambda kv: -kv[1])[:slowest]:
        print(f"  {s:6.1f} s  {file}::{name}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))

"""Where a test run's CPU goes: every process's CPU time, read from /proc every SECONDS
(1 by default), summed by kind of process (broker, Spark, a `kmigrate` sub-command, ...)
when stopped.

    python -m tools.cpu_sampler cpu.json [SECONDS] &   # then run the suite
    kill %1                                            # writes cpu.json

A process is counted at the last CPU time seen before it exited, so one that lives
shorter than SECONDS is missed or counted short; one that ran before the sampler started
(kernel threads: "?") counts only what it used since.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def kind(argv: list[str]) -> str:
    """What a process is, from its command line."""
    line = " ".join(argv)
    if "kmigrate-zygote" in line:  # harness/zygote.py and the commands forked from it
        return "kmigrate (forked by the tests' zygote)"
    for marker, name in (
        ("server.properties", "broker"),
        ("controller.properties", "controller"),
        ("QuorumPeerMain", "zookeeper"),
        ("StorageTool", "storage-format"),
        ("org.apache.spark", "spark-jvm"),
        ("pyspark", "spark-python-worker"),
        ("schema-registry", "registry"),
    ):
        if marker in line:
            return name
    if argv and Path(argv[0]).name == "java":
        return "java-tool/client"
    if "exec(eval(sys.stdin.readline()))" in line:
        return "pytest-worker"
    if "kmigrate" in argv:
        words = [a for a in argv[argv.index("kmigrate") + 1 :] if a[:1] != "-" and "/" not in a]
        return "kmigrate " + " ".join(words[:2])
    if "chrom" in line:
        return "chromium"
    return Path(argv[0]).name if argv else "?"


def _cpu(pid: str) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _busy() -> tuple[int, int]:
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(values), values[3] + values[4]  # all, idle + iowait


def main(out: Path, interval: float = 1.0) -> None:
    seen: dict[int, tuple[str, float]] = {}
    before: dict[int, float] = {}  # CPU time of the processes already running
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            before[int(pid)] = _cpu(pid)
        except (OSError, IndexError, ValueError):
            continue
    stopped: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: stopped.append(signum))
    began, (total0, idle0) = time.monotonic(), _busy()
    while not stopped:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cpu = _cpu(pid)
                if int(pid) not in seen:
                    raw = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                    seen[int(pid)] = (kind([a.decode(errors="replace") for a in raw if a]), cpu)
                seen[int(pid)] = (seen[int(pid)][0], max(cpu, seen[int(pid)][1]))
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
        time.sleep(interval)
    total1, idle1 = _busy()
    by_kind: dict[str, list[float]] = {}
    for pid, (name, cpu) in seen.items():
        entry = by_kind.setdefault(name, [0.0, 0])
        entry[0] += cpu - before.get(pid, 0.0)
        entry[1] += 1
    report = {
        "wall_s": round(time.monotonic() - began),
        "machine_busy_cpu_s": round((total1 - total0 - (idle1 - idle0)) / _TICK),
        "cpu_s_and_processes_by_kind": {
            k: [round(v[0]), int(v[1])]
            for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1][0])
        },
    }
    out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), *(float(a) for a in sys.argv[2:3]))

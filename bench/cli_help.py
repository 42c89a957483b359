"""How fast `--help` answers: `kmigrate --help` and `kmigrate COMMAND --help` for every
top-level command (each group, and verify, demo, serve), against Kafka's own
`kafka-topics.sh --help` (TopicCommand: the tool an operator would run instead) and the
interpreter's own start (`python -c pass`), in one run.

    .venv/bin/python bench/cli_help.py [--repeat 10]

Each one runs ``--repeat`` times as a fresh process, as a shell starts it (``python -m
kmigrate ... --help``); the rounds interleave the commands, so a burst of load on a
shared machine spreads over all of them. It reports each command's median and p90 wall
time, and its median CPU time (user + system: what the command costs, whatever else the
machine runs), and writes ``bench/results/cli-help-<date>.json``. Goal: every median
under 0.3 s. A sub-command's help (`kmigrate mirror start --help`) loads what its group's
does.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time

from common import machine, results_header, write_results

from kmigrate.cli.main import COMMANDS
from kmigrate.sandbox.jars import DEFAULT_KAFKA_VERSION, ensure_jars

GOAL_S = 0.3
ANCHOR = "python -c pass"
KAFKA_TOPICS = "kafka-topics --help"


def run_once(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``argv`` (which must exit 0; TopicCommand
    prints its help and exits 1)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, check=False)
    if done.returncode not in (0, 1) or (done.returncode == 1 and argv[0] != "java"):
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-500:]!r}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def summary(walls: list[float], cpus: list[float]) -> dict[str, float]:
    """Median and p90 wall time, median CPU time, in seconds."""
    return {
        "median_s": round(statistics.median(walls), 3),
        "p90_s": round(statistics.quantiles(walls, n=10, method="inclusive")[-1], 3),
        "cpu_median_s": round(statistics.median(cpus), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    jars = ensure_jars(DEFAULT_KAFKA_VERSION)
    argvs = {
        ANCHOR: [sys.executable, "-c", "pass"],
        KAFKA_TOPICS: ["java", "-cp", f"{jars}/*", "org.apache.kafka.tools.TopicCommand", "--help"],
    }
    for command in ["", *sorted(COMMANDS)]:
        name = " ".join(["kmigrate", *command.split(), "--help"])
        argvs[name] = [sys.executable, "-m", "kmigrate", *command.split(), "--help"]
    at_start = machine()
    times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in argvs}
    for _ in range(args.repeat):
        for name, argv in argvs.items():
            wall, cpu = run_once(argv)
            times[name][0].append(wall)
            times[name][1].append(cpu)
    found = {name: summary(*times[name]) for name in argvs}
    anchor = found.pop(ANCHOR)
    kafka_topics = found.pop(KAFKA_TOPICS)
    slowest = max(found, key=lambda name: found[name]["median_s"])
    results = {
        **results_header(0),
        "machine": at_start,
        "repeat": args.repeat,
        "goal_s": GOAL_S,
        "python_start": anchor,
        "kafka_topics_help": kafka_topics,
        "helps": found,
        "slowest": slowest,
        "slowest_median_s": found[slowest]["median_s"],
        "all_under_goal": found[slowest]["median_s"] < GOAL_S,
        "slowest_vs_kafka_topics": round(found[slowest]["median_s"] / kafka_topics["median_s"], 2),
    }
    out = write_results("cli-help-", results)
    print(f"{ANCHOR}: median {anchor['median_s']:.3f}s (load {at_start['load_average']})")
    print(f"{KAFKA_TOPICS}: median {kafka_topics['median_s']:.3f}s")
    for name, s in sorted(found.items(), key=lambda kv: -kv[1]["median_s"]):
        print(
            f"  {s['median_s']:.3f}s median, {s['p90_s']:.3f}s p90, "
            f"{s['cpu_median_s']:.3f}s CPU  {name}"
        )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

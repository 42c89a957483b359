"""How fast `--help` answers: `kmigrate --help` and every sub-command's, against Kafka's
own `kafka-topics.sh --help` (the tool an operator would run instead), in one run.

    KMIGRATE_CACHE=$PWD/.cache .venv/bin/python bench/cli_help.py [--repeat 5]

Each command runs ``--repeat`` times as a fresh process (as a shell would start it); the
median is reported. Goal: every kmigrate help under 0.5 s.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import click
from common import results_header, write_results

from kmigrate.cli.main import cli
from kmigrate.sandbox.jars import DEFAULT_KAFKA_VERSION, ensure_jars

GOAL_S = 0.5


def command_paths() -> list[list[str]]:
    paths: list[list[str]] = [[]]

    def walk(command: click.Command, path: list[str]) -> None:
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                paths.append([*path, name])
                walk(sub, [*path, name])

    walk(cli, [])
    return paths


def median_seconds(argv: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        # TopicCommand prints its help and exits 1; kmigrate exits 0.
        subprocess.run(argv, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    jars = ensure_jars(DEFAULT_KAFKA_VERSION)
    java = ["java", "-cp", f"{jars}/*", "org.apache.kafka.tools.TopicCommand", "--help"]
    kafka_topics = median_seconds(java, args.repeat)
    helps = {
        " ".join(["kmigrate", *p, "--help"]): median_seconds(
            [sys.executable, "-m", "kmigrate", *p, "--help"], args.repeat
        )
        for p in command_paths()
    }
    slowest = max(helps.values())
    results = {
        **results_header(0),
        "repeat": args.repeat,
        "goal_s": GOAL_S,
        "kafka_topics_help_s": round(kafka_topics, 3),
        "kmigrate_help_s": {k: round(v, 3) for k, v in helps.items()},
        "slowest_s": round(slowest, 3),
        "slowest_vs_kafka_topics": round(slowest / kafka_topics, 2),
        "all_under_goal": slowest < GOAL_S,
    }
    out = write_results("cli-help-", results)
    print(f"kafka-topics --help {kafka_topics:.3f}s; slowest kmigrate help {slowest:.3f}s")
    for name, seconds in sorted(helps.items(), key=lambda kv: -kv[1])[:5]:
        print(f"  {seconds:.3f}s  {name}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

"""MkDocs hook: fill docs/benchmarks.md's tables from bench/results/*.json.

The page holds placeholders, one per table, on a line of their own:

    <!-- bench: mirror -->

Each is replaced by a caption (date, machine, Kafka version, the command that made the
run and the results file) and a Markdown table built from the newest results file of
that kind (some kinds also list every run). A value the file does not hold is shown as
"not recorded", never guessed; a placeholder with no results file, or an unknown kind, is
a warning, so `mkdocs build --strict` fails on it.

Results files are named `<kind>-<date>[-<suffix>].json`; the mirror's are `<date>.json`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.hooks.benchmarks")

PAGE = "benchmarks.md"
PLACEHOLDER = re.compile(r"^<!-- bench: ([a-z-]+) -->$", re.MULTILINE)
NAME = re.compile(
    r"^(?:(?P<kind>[a-z-]+?)-)?(?P<date>\d{4}-\d{2}-\d{2})(?P<suffix>-[\w-]+)?\.json$"
)
NOT_RECORDED = "not recorded"
TIMES = "\u00d7"  # the multiplication sign
NO_KAFKA = {"reassign-scale"}  # benchmarks that run no Kafka at all
MISSING = object()


@dataclass(frozen=True)
class Result:
    """One results file: its kind (from the name), its path and its data."""

    kind: str
    path: Path
    data: dict[str, Any]

    @property
    def date(self) -> str:
        return str(self.data.get("date") or NAME.match(self.path.name)["date"])  # type: ignore[index]

    def get(self, dotted: str) -> Any:
        """The value at a dotted path, or MISSING."""
        value: Any = self.data
        for key in dotted.split("."):
            if not isinstance(value, dict) or key not in value:
                return MISSING
            value = value[key]
        return value


# ---------------------------------------------------------------------------- loading


def load_results(directory: Path) -> dict[str, list[Result]]:
    """Every results file by kind, oldest first (files that do not parse are skipped)."""
    by_kind: dict[str, list[Result]] = {}
    for path in sorted(directory.glob("*.json")):
        match = NAME.match(path.name)
        if not match:
            continue
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            log.warning("benchmarks: %s cannot be read: %s", path, exc)
            continue
        kind = match["kind"] or "mirror"
        by_kind.setdefault(kind, []).append(Result(kind, path, data))
    for results in by_kind.values():
        results.sort(key=lambda r: (r.date, r.path.name))
    return by_kind


# ---------------------------------------------------------------------------- formatting


def num(value: Any, digits: int = 0, unit: str = "") -> str:
    """A number with thousands separators and `digits` decimals, or "not recorded"."""
    if value is MISSING or value is None:
        return NOT_RECORDED
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    text = f"{value:,.{digits}f}" if digits or isinstance(value, float) else f"{value:,}"
    return f"{text}{unit}"


def pair(a: Any, b: Any, digits: int = 0, unit: str = "") -> str:
    """Two numbers as "a / b unit"."""
    if a is MISSING and b is MISSING:
        return NOT_RECORDED
    return f"{num(a, digits)} / {num(b, digits)}{unit}"


def ratio(a: Any, b: Any) -> str:
    """a / b as "1.23x" (a multiplication sign), or "not recorded" when either is missing
    or b is 0."""
    if a is MISSING or b is MISSING or not b:
        return NOT_RECORDED
    return f"{a / b:.2f}{TIMES}"


def table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str = "") -> str:
    """A Markdown table; `align` gives one of l/r per column (default: l, then r)."""
    align = align or "l" + "r" * (len(header) - 1)
    marks = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(marks) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def blocks(*parts: str) -> str:
    """Markdown blocks separated by blank lines."""
    return "\n\n".join(parts)


def change(r: Result, key: str, what: str, digits: int = 0) -> str:
    """A spread before and after a plan, as "a → b"."""
    before = r.get(f"{key}.spread_before.{what}")
    after = r.get(f"{key}.spread_after.{what}")
    return f"{num(before, digits)} \u2192 {num(after, digits)}"


def machine(r: Result) -> str:
    """What the file says about the machine, and what it does not."""
    m = r.get("machine")
    if not isinstance(m, dict):
        return f"machine {NOT_RECORDED}"
    parts = [f"{m['cores']} cores" if "cores" in m else f"cores {NOT_RECORDED}"]
    parts.append(str(m["cpu"]) if "cpu" in m else f"CPU model {NOT_RECORDED}")
    parts.append(f"{m['memory_gb']} GB memory" if "memory_gb" in m else f"memory {NOT_RECORDED}")
    load = m.get("load_average", m.get("load_average_at_start"))
    if load is not None:
        first = load[0] if isinstance(load, list) else load
        parts.append(f"load average {first:.1f} at the start (shared machine)")
    return ", ".join(parts)


def caption(r: Result, command: str, unrecorded: Sequence[str] = ()) -> str:
    """Date, machine, Kafka version, command and file of one run."""
    kafka = r.get("kafka")
    if kafka is MISSING:
        kafka = "none (no cluster in this benchmark)" if r.kind in NO_KAFKA else NOT_RECORDED
    lines = [
        f"*Run of {r.date} · machine: {machine(r)} · Kafka {kafka} · "
        f"results: `bench/results/{r.path.name}`*",
        "",
        f"Command: `.venv/bin/python {command}`"
        + (
            " (options the results file does not record: "
            + ", ".join(f"`{o}`" for o in unrecorded)
            + ")"
            if unrecorded
            else ""
        ),
    ]
    return "\n".join(lines)


def arg(option: str, value: Any) -> str:
    return "" if value is MISSING else f" {option} {value}"


def missing_args(pairs: Sequence[tuple[str, Any]]) -> list[str]:
    return [option for option, value in pairs if value is MISSING]


def command(script: str, pairs: Sequence[tuple[str, Any]]) -> tuple[str, list[str]]:
    """The command line from the options the file records, and those it does not."""
    return script + "".join(arg(o, v) for o, v in pairs), missing_args(pairs)


# ---------------------------------------------------------------------------- tables


def mirror(results: list[Result]) -> str:
    r = results[-1]
    pairs = [
        ("--small", r.get("data.small_100B")),
        *(
            [("--medium", r.get("data.medium_1KB"))]
            if r.get("data.medium_1KB") is not MISSING
            else []
        ),
        ("--large", r.get("data.large_10KB")),
        *([("--codecs", r.get("data.codecs"))] if r.get("data.codecs") is not MISSING else []),
        *([("--shapes", r.get("data.shapes"))] if r.get("data.shapes") is not MISSING else []),
        *(
            [("--turns", r.get("kmigrate_bytes.turns"))]
            if r.get("kmigrate_bytes.turns") is not MISSING
            else []
        ),
        ("--lag-rate", r.get("kmigrate.lag.rate")),
        ("--lag-seconds", MISSING),
    ]
    cmd, unrecorded = command("bench/mirror_vs_mm2.py", pairs)

    def row(name: str, key: str) -> list[str]:
        return [
            name,
            num(r.get(f"{key}.by_size.bench-small.records_per_s"), 0),
            num(r.get(f"{key}.by_size.bench-large.mb_per_s"), 1),
            f"{num(r.get(f'{key}.records_per_s'), 0)} ({num(r.get(f'{key}.mb_per_s'), 1)})",
            " / ".join(
                [
                    ratio(
                        r.get(f"{key}.by_size.bench-small.records_per_s"),
                        r.get("mm2.by_size.bench-small.records_per_s"),
                    ),
                    ratio(
                        r.get(f"{key}.by_size.bench-large.mb_per_s"),
                        r.get("mm2.by_size.bench-large.mb_per_s"),
                    ),
                    ratio(r.get(f"{key}.records_per_s"), r.get("mm2.records_per_s")),
                ]
            ),
            num(r.get(f"{key}.startup_s"), 1, " s"),
            pair(_s(r.get(f"{key}.lag.p50_ms")), _s(r.get(f"{key}.lag.p99_ms")), 2, " s"),
        ]

    ceiling = [
        [
            "ceiling: ConsumerPerformance on the source",
            num(r.get("ceiling.bench-small.consumer_source.records_per_s"), 0),
            num(r.get("ceiling.bench-large.consumer_source.mb_per_s"), 1),
            "",
            "",
            "",
            "",
        ],
        [
            "ceiling: ProducerPerformance to the target (acks=all)",
            num(r.get("ceiling.bench-small.producer_target.records_per_s"), 0),
            num(r.get("ceiling.bench-large.producer_target.mb_per_s"), 1),
            "",
            "",
            "",
            "",
        ],
    ]
    header = [
        "contender",
        "100 B records/s",
        "10 KB MB/s",
        "together records/s (MB/s)",
        "vs MM2: 100 B / 10 KB / together",
        "start-up",
        "lag p50 / p99",
    ]
    contenders = [row("MirrorMaker 2", "mm2"), row("kmigrate mirror", "kmigrate")]
    if r.get("kmigrate_bytes") is not MISSING:
        contenders = [
            row("MirrorMaker 2", "mm2"),
            row("kmigrate, record by record (`--copy records`)", "kmigrate"),
            row("kmigrate, batches as bytes (`--copy bytes`, the default)", "kmigrate_bytes"),
        ]
    latest = table(header, [*ceiling, *contenders])
    history = table(
        [
            "run",
            "kmigrate records/s",
            "kmigrate, batches as bytes",
            "MirrorMaker 2 records/s",
            "kmigrate vs MM2",
            "lag p99 kmigrate / MM2",
        ],
        [
            [
                x.date,
                num(x.get("kmigrate.records_per_s"), 0),
                ""
                if x.get("kmigrate_bytes") is MISSING
                else num(x.get("kmigrate_bytes.records_per_s"), 0),
                num(x.get("mm2.records_per_s"), 0),
                ratio(x.get("kmigrate.records_per_s"), x.get("mm2.records_per_s")),
                pair(_s(x.get("kmigrate.lag.p99_ms")), _s(x.get("mm2.lag.p99_ms")), 2, " s"),
            ]
            for x in reversed(results)
        ],
    )
    by_topic = _byte_copy_by_topic(r)
    end_to_end = _end_to_end_by_topic(r)
    turns = r.get("kmigrate_bytes.turns")
    return blocks(
        caption(r, cmd, unrecorded),
        *(
            [
                f"End to end (command to the last record on the target) and steady, medians of "
                f"{turns} turns, the contenders' order rotated each turn:",
                end_to_end,
            ]
            if end_to_end
            else []
        ),
        latest,
        *(
            ["Per topic, same run (CPU: the copier's process tree while it copied):", by_topic]
            if by_topic
            else []
        ),
        "Every run, newest first (all topics together):",
        history,
    )


def _end_to_end_by_topic(r: Result) -> str:
    """Per topic (record size, source batch shape), the medians over the run's turns:
    command to the last record, and steady throughput, the byte copy against MirrorMaker
    2; empty for runs before turns were measured."""
    sizes = r.get("kmigrate_bytes.by_size")
    if not isinstance(sizes, dict) or r.get("kmigrate_bytes.turns") is MISSING:
        return ""
    rows = []
    for topic in sizes:
        mine, theirs = f"kmigrate_bytes.by_size.{topic}", f"mm2.by_size.{topic}"
        rows.append(
            [
                f"`{topic}`",
                num(r.get(f"{mine}.records"), 0),
                num(r.get(f"{theirs}.end_to_end_s"), 1, " s"),
                num(r.get(f"{mine}.end_to_end_s"), 1, " s"),
                ratio(r.get(f"{theirs}.end_to_end_s"), r.get(f"{mine}.end_to_end_s")),
                num(r.get(f"{theirs}.records_per_s"), 0),
                num(r.get(f"{mine}.records_per_s"), 0),
                ratio(r.get(f"{mine}.records_per_s"), r.get(f"{theirs}.records_per_s")),
            ]
        )
    header = [
        "topic (`-b<batch.size>`: the source's batch shape)",
        "records",
        "MM2 end to end",
        "byte copy end to end",
        "end to end vs MM2",
        "MM2 steady records/s",
        "byte copy steady records/s",
        "steady vs MM2",
    ]
    return table(header, rows)


def _byte_copy_by_topic(r: Result) -> str:
    """The byte copy against MirrorMaker 2, the record copier and ConsumerPerformance,
    topic by topic (size and codec); empty for runs before it."""
    sizes = r.get("kmigrate_bytes.by_size")
    if not isinstance(sizes, dict):
        return ""
    rows = []
    for topic in sizes:
        mine = f"kmigrate_bytes.by_size.{topic}"
        rows.append(
            [
                f"`{topic}`",
                num(r.get(f"mm2.by_size.{topic}.records_per_s"), 0),
                num(r.get(f"kmigrate.by_size.{topic}.records_per_s"), 0),
                num(r.get(f"{mine}.records_per_s"), 0),
                num(r.get(f"ceiling.{topic}.consumer_source.records_per_s"), 0),
                ratio(r.get(f"{mine}.records_per_s"), r.get(f"mm2.by_size.{topic}.records_per_s")),
                ratio(
                    r.get(f"{mine}.records_per_s"),
                    r.get(f"ceiling.{topic}.consumer_source.records_per_s"),
                ),
                pair(
                    r.get(f"kmigrate.by_size.{topic}.cpu_s_per_mb"),
                    r.get(f"{mine}.cpu_s_per_mb"),
                    4,
                    " s",
                ),
            ]
        )
    header = [
        "topic",
        "MM2 records/s",
        "records copier records/s",
        "byte copy records/s",
        "ConsumerPerformance records/s",
        "byte copy vs MM2",
        "byte copy vs ConsumerPerformance",
        "CPU per MB: records / bytes",
    ]
    return table(header, rows)


def _s(ms: Any) -> Any:
    return ms if ms is MISSING else ms / 1000


def groups(results: list[Result]) -> str:
    r = results[-1]
    cmd, unrecorded = command(
        "bench/groups_vs_mm2.py", [("--records", r.get("records_per_partition"))]
    )
    rows = []
    for name, key in (("MirrorMaker 2", "mm2"), ("kmigrate", "kmigrate")):
        parts = r.get(f"{key}.partitions")
        parts = parts if isinstance(parts, list) else []
        for topic in sorted({p["topic"] for p in parts}):
            mine = sorted((p for p in parts if p["topic"] == topic), key=lambda p: p["partition"])
            rows.append(
                [f"{name}, `{topic}`"]
                + [num(p.get("repeated"), 0) for p in mine]
                + [
                    num(sum(p.get("repeated", 0) for p in mine), 0),
                    num(sum(p.get("skipped", 0) for p in mine), 0),
                ]
            )
    lags = r.get("lags")
    lags = lags if isinstance(lags, list) else []
    header = [
        "records re-read, by group lag on partitions 0-3:",
        *[num(x) for x in lags],
        "repeated",
        "skipped",
    ]
    return f"{caption(r, cmd, unrecorded)}\n\n{table(header, rows)}"


def verify(results: list[Result]) -> str:
    r = results[-1]
    steps = r.get("steps")
    if isinstance(steps, list):
        gb = ",".join(f"{round(s.get('gb_per_side', 0), 2):g}" for s in steps)
        pairs = [("--gb", gb), ("--size", r.get("record_bytes"))]
    else:
        pairs = [("--records", r.get("records")), ("--size", r.get("record_bytes"))]
    cmd, unrecorded = command("bench/verify.py", pairs)
    rows = []
    for x in reversed(results):
        for step in _verify_steps(x):
            rows.append(
                [
                    "one consumer per cluster, BLAKE2b over every record",
                    x.date,
                    num(step.get("gb_per_side"), 2),
                    num(step.get("consumer_per_side.wall_s"), 1, " s"),
                    num(step.get("consumer_per_side.mb_per_s"), 1),
                    f"1.00{TIMES}",
                ]
            )
            rows.append(
                [
                    "`kmigrate verify --link`, start-up included",
                    x.date,
                    num(step.get("gb_per_side"), 2),
                    num(step.get("kmigrate_verify.wall_s"), 1, " s"),
                    num(step.get("kmigrate_verify.mb_per_s"), 1),
                    ratio(step.get("consumer_per_side.wall_s"), step.get("kmigrate_verify.wall_s")),
                ]
            )
    header = ["contender", "run", "GB per side", "wall time", "MB/s per side", "speed vs consumers"]
    return f"{caption(r, cmd, unrecorded)}\n\n{table(header, rows, 'llrrrr')}"


def _verify_steps(result: Result) -> list[Result]:
    """A run's sizes: each step of a ``--gb`` run, or the one size of an older run."""
    steps = result.get("steps")
    if not isinstance(steps, list):
        return [result]
    return [Result(result.kind, result.path, step) for step in steps if isinstance(step, dict)]


def scale(results: list[Result]) -> str:
    r = results[-1]
    cases = r.get("cases") if isinstance(r.get("cases"), list) else []
    first_groups = cases[0].get("groups", {}).get("groups", MISSING) if cases else MISSING
    cmd, unrecorded = command(
        "bench/scale.py",
        [
            ("--partitions", ",".join(str(c["partitions"]) for c in cases) or MISSING),
            ("--bytes", r.get("bytes_per_case")),
            ("--lag-rate", r.get("lag_rate")),
            ("--lag-seconds", r.get("lag_seconds")),
            ("--groups", first_groups),
            ("--broker-heap", r.get("broker_heap")),
        ],
    )
    rows = []
    for c in cases:
        x = Result("scale", r.path, c)
        role = x.get("memory.peak_rss_by_role_mb")
        roles = (
            " / ".join(num(role.get(k), 0) for k in ("driver", "workers", "jvm"))
            if isinstance(role, dict)
            else NOT_RECORDED
        )
        rows.append(
            [
                num(c.get("partitions")),
                f"{num(x.get('first_copy.total_s'), 1, ' s')} "
                f"({pair(x.get('first_copy.startup_s'), x.get('first_copy.copy_s'), 1)})",
                pair(_s(x.get("lag.p50_ms")), _s(x.get("lag.p99_ms")), 2, " s"),
                num(x.get("lag.source_ack.p50_ms"), 0, " ms"),
                f"{num(x.get('memory.peak_tree_rss_mb'), 0, ' MB')} ({roles})",
                num(x.get("verify.wall_s"), 1, " s"),
                f"{num(x.get('groups.migrate_s'), 1, ' s')} ({num(x.get('groups.groups'))} groups)",
            ]
        )
    header = [
        "partitions",
        "first copy (start-up / copy)",
        "lag p50 / p99",
        "source broker's ack p50",
        "peak memory (driver / workers / JVM)",
        "verify",
        "groups migrate --groups",
    ]
    goals = r.get("goals")
    verdicts = ""
    if isinstance(goals, dict):
        items = [
            f"- `{name}`: {num(g.get('value'), 2)} (goal {g.get('goal', NOT_RECORDED)}): "
            f"**{'met' if g.get('met') else 'missed'}**"
            for name, g in goals.items()
            if isinstance(g, dict)
        ]
        verdicts = (
            "\n\nGoals, largest case against the smallest, as the file records them:\n\n"
            + "\n".join(items)
        )
    return f"{caption(r, cmd, unrecorded)}\n\n{table(header, rows)}{verdicts}"


def topology(results: list[Result]) -> str:
    r = results[-1]
    runs = r.get("runs") if isinstance(r.get("runs"), list) else []
    first = runs[0] if runs else {}
    cmd, unrecorded = command(
        "bench/topology_scale.py",
        [
            ("--topics", first.get("topics", MISSING)),
            ("--partitions", first.get("partitions_per_topic", MISSING)),
        ],
    )
    rows = [
        [
            str(x.get("label", NOT_RECORDED)),
            f"{num(x.get('topics'))} {TIMES} {num(x.get('partitions_per_topic'))}",
            num(x.get("sync_topology_s"), 1, " s"),
            num(x.get("calls", {}).get("admin.create_topics", MISSING)),
            num(x.get("calls", {}).get("admin.describe_configs", MISSING)),
            num(x.get("calls", {}).get("store.transaction", MISSING)),
        ]
        for x in runs
    ]
    header = [
        "code",
        f"topics {TIMES} partitions",
        "link start (before Spark)",
        "CreateTopics",
        "DescribeConfigs",
        "store transactions",
    ]
    return f"{caption(r, cmd, unrecorded)}\n\n{table(header, rows, 'llrrrr')}"


def groups_scale(results: list[Result]) -> str:
    r = results[-1]
    rows = []
    sizes_seen: list[int] = []
    for phase in ("before", "after"):
        for s in r.get(f"{phase}.sizes") if isinstance(r.get(f"{phase}.sizes"), list) else []:
            sizes_seen.append(s.get("groups"))
            rows.append(
                [
                    phase,
                    num(s.get("groups")),
                    num(s.get("per_group_s", MISSING), 1, " s"),
                    num(s.get("bulk_s", MISSING), 1, " s"),
                    num(s.get("cli_s", MISSING), 1, " s"),
                    num(s.get("sync_round_s", MISSING), 1, " s"),
                ]
            )
    sizes = " ".join(str(s) for s in sorted(set(sizes_seen))) or MISSING
    cmd, unrecorded = command("bench/groups_scale.py", [("--groups", sizes)])
    header = [
        "code",
        "groups",
        "one at a time",
        "all at once (in process)",
        "`groups migrate --groups`",
        "one `groups sync` round",
    ]
    return f"{caption(r, cmd, unrecorded)}\n\n{table(header, rows, 'lrrrrr')}"


def _phases(r: Result, names: Sequence[str]) -> list[str]:
    return [num(r.get(f"phases_s.{n}"), 1, " s") for n in names]


def _load_columns(r: Result) -> list[str]:
    return [
        f"{num(r.get('produced'))} / {num(r.get('acknowledged'))}",
        pair(r.get("produce_failed"), r.get("produce_retried_requests")),
        num(r.get("longest_produce_pause_s"), 2, " s"),
        num(r.get("slowest_ack_s"), 2, " s"),
        f"**{pair(r.get('lost'), r.get('repeated'))}**",
        pair(r.get("group_missed"), r.get("group_redelivered")),
    ]


LOAD_HEADER = [
    "produced / acked",
    "failed / retried produce requests",
    "longest produce pause",
    "slowest ack",
    "lost / repeated",
    "group missed / re-delivered",
]


def zk_move(results: list[Result]) -> str:
    r = results[-1]
    cmd, unrecorded = command(
        "bench/zk_move.py", [("--rate", r.get("rate_per_s")), ("--partitions", r.get("partitions"))]
    )
    other = r.get("other_client")
    other_cell = (
        f"{num(other.get('session_losses', MISSING))} "
        f"({num(other.get('connection_suspensions', MISSING))})"
        if isinstance(other, dict)
        else NOT_RECORDED
    )
    phases = ["join", "check", "switch", "split", "total"]
    header = [
        *phases,
        *LOAD_HEADER,
        "controller changes",
        "other client: session losses (connection suspensions)",
    ]
    row = [*_phases(r, phases), *_load_columns(r), num(r.get("controller_changes")), other_cell]
    zookeeper = r.get("zookeeper")
    setup = f"ZooKeeper {NOT_RECORDED if zookeeper is MISSING else zookeeper}."
    return f"{caption(r, cmd, unrecorded)}\n\n{setup}\n\n{table(header, [row])}"


def kraft(results: list[Result]) -> str:
    r = results[-1]
    cmd, unrecorded = command(
        "bench/kraft_migration.py",
        [
            ("--rate", r.get("rate_per_s")),
            ("--topics", MISSING),
            ("--controllers", r.get("controllers")),
        ],
    )
    phases = ["controllers", "roll1", "dual-write", "roll2", "finalize", "total"]
    identical = r.get("metadata_identical")
    meta = (
        NOT_RECORDED if identical is MISSING else ("**identical**" if identical else "**differs**")
    )
    header = [
        *phases,
        *LOAD_HEADER,
        f"metadata ({r.get('metadata') if r.get('metadata') is not MISSING else NOT_RECORDED})",
    ]
    row = [*_phases(r, phases), *_load_columns(r), meta]
    return f"{caption(r, cmd, unrecorded)}\n\n{table(header, [row])}"


def gateway(results: list[Result]) -> str:
    r = results[-1]
    cmd, unrecorded = command(
        "bench/gateway.py",
        [
            ("--records-1k", MISSING),
            ("--records-100", MISSING),
            ("--latency-rate", r.get("latency.records_per_s")),
            ("--latency-seconds", r.get("latency.seconds_per_run")),
        ],
    )
    rows = []
    sizes = r.get("sizes") if isinstance(r.get("sizes"), dict) else {}
    for size, s in sizes.items():
        x = Result("gateway", r.path, s)
        rows.append(
            [
                f"{size} records",
                pair(x.get("direct_produce.mb_per_s"), x.get("gateway_produce.mb_per_s"), 1),
                f"**{num(x.get('produce_ratio'), 2)}**",
                pair(x.get("direct_consume.mb_per_s"), x.get("gateway_consume.mb_per_s"), 1),
                f"**{num(x.get('consume_ratio'), 2)}**",
                pair(
                    x.get("direct_produce_at_half.p99_ms"),
                    x.get("gateway_produce_at_half.p99_ms"),
                    0,
                    " ms",
                ),
                num(x.get("gateway_produce_at_half.gateway_cpu"), 2, " cores"),
            ]
        )
    header = [
        "",
        "produce MB/s direct / gateway",
        "ratio",
        "consume MB/s direct / gateway",
        "ratio",
        "produce p99 at half rate direct / gateway",
        "gateway CPU",
    ]
    out = blocks(
        caption(r, cmd, unrecorded),
        "Throughput (full speed, then half of it for the latency column):",
        table(header, rows),
    )
    with_latency = [x for x in results if isinstance(x.get("latency"), dict)]
    if with_latency:
        out += "\n\n" + gateway_latency(with_latency[-1])
    return out


def gateway_latency(r: Result) -> str:
    d, g, added = "latency.medians.direct", "latency.medians.gateway", "latency.added_ms"
    rows = []
    for name, key in (
        ("produce ack, Java (ProducerPerformance, whole ms)", "java_ack"),
        ("produce ack, franz-go", "franz_ack"),
        ("end to end, franz-go producer → franz-go group consumer", "e2e"),
    ):
        rows.append(
            [
                name,
                pair(r.get(f"{d}.{key}_p50_ms"), r.get(f"{g}.{key}_p50_ms"), 2, " ms"),
                f"**{num(r.get(f'{added}.{key}_p50_ms'), 2, ' ms')}**",
                pair(r.get(f"{d}.{key}_p99_ms"), r.get(f"{g}.{key}_p99_ms"), 2, " ms"),
                f"**{num(r.get(f'{added}.{key}_p99_ms'), 2, ' ms')}**",
            ]
        )
    rate = r.get("latency.records_per_s")
    size = r.get("latency.record_bytes")
    goal = r.get("latency.goal_added_ms")
    goal_text = (
        f"Goal: at most {num(goal.get('p50_ms'))} ms added at p50 and "
        f"{num(goal.get('p99_ms'))} ms at p99."
        if isinstance(goal, dict)
        else "The file records no goal."
    )
    header = [
        f"{num(rate)} {TIMES} {num(size)} B records/s, medians of the runs",
        "p50 direct / gateway",
        "added p50",
        "p99 direct / gateway",
        "added p99",
    ]
    return (
        f"Latency where the machine is not saturated (run of {r.date}, "
        f"`bench/results/{r.path.name}`). {goal_text}\n\n" + table(header, rows)
    )


def gateway_migration(results: list[Result]) -> str:
    """The newest run of the moves, and the newest of the guided promote (a run of
    `--only guided` has that alone)."""
    r = next((x for x in reversed(results) if x.get("scenarios.smooth") is not MISSING), None)
    g = next(
        (x for x in reversed(results) if x.get("scenarios.guided_promote") is not MISSING), None
    )
    r, g = r or results[-1], g or results[-1]
    cmd, unrecorded = command(
        "bench/gateway_migration.py", [("--rate", r.get("rate")), ("--seconds", MISSING)]
    )
    rows = []
    for name, key in (
        ("smooth, half the partitions", "smooth"),
        ("failover, origin's broker killed with -9, all partitions", "failover"),
    ):
        x = f"scenarios.{key}"
        rows.append(
            [
                name,
                num(r.get(f"{x}.failed_sends")),
                f"**{num(r.get(f'{x}.longest_produce_pause_s'), 2, ' s')}**",
                pair(r.get(f"{x}.p99_ack_ms_before"), r.get(f"{x}.p99_ack_ms_during"), 0, " ms"),
                num(r.get(f"{x}.fence_ms"), 0, " ms") if key == "smooth" else "no fence (failover)",
                num(r.get(f"{x}.acked_not_read")),
                num(r.get(f"{x}.read_twice")),
            ]
        )
    moves = table(
        [
            "scenario",
            "failed sends",
            "longest produce pause",
            "producer p99 before / during",
            "writes fenced",
            "acked records not read",
            "read twice",
        ],
        rows,
    )
    promote_rows = []
    for name, key in (
        ("producers stopped by hand (plain guided migration)", "stopped_by_hand"),
        ("`--via-gateway` (the producer never stops)", "via_gateway"),
    ):
        x = f"scenarios.guided_promote.{key}"
        verified = g.get(f"{x}.verify")
        held = g.get(f"{x}.writes_held")
        promote_rows.append(
            [
                name,
                num(g.get(f"{x}.failed_sends")),
                f"**{num(g.get(f'{x}.producer_pause_s'), 2, ' s')}**",
                num(g.get(f"{x}.promote_s"), 2, " s"),
                num(g.get(f"{x}.not_consumed")),
                num(g.get(f"{x}.consumed_twice")),
                NOT_RECORDED if verified is MISSING else ("passed" if verified else "failed"),
                "no fence" if key == "stopped_by_hand" else num(held),
            ]
        )
    promote = table(
        [
            "guided promote",
            "failed sends",
            "producer pause",
            "promote",
            "not consumed",
            "consumed twice",
            "verify",
            "writes held (where the time went, ms)",
        ],
        promote_rows,
    )
    guided_cmd, guided_unrecorded = command(
        "bench/gateway_migration.py",
        [("--only", "guided" if g is not r else MISSING), ("--demo-rate", g.get("demo_rate"))],
    )
    guided_caption = (
        "The guided migration's promote in the same run"
        if g is r
        else caption(g, guided_cmd, guided_unrecorded) + "\n\nThe guided migration's promote"
    )
    return (
        f"{caption(r, cmd, unrecorded)}\n\nPartition moves, producer at {num(r.get('rate'))} "
        f"records/s over {num(r.get('partitions'))} partitions:\n\n{moves}\n\n"
        f"{guided_caption}:\n\n{promote}"
    )


def reassign(results: list[Result]) -> str:
    # a variant (a name with a suffix: -tuned, -kafka-first, ...) is a comparison for
    # bench/README, not the page's table
    plain = [x for x in results if not NAME.match(x.path.name)["suffix"]]  # type: ignore[index]
    r = (plain or results)[-1]
    cmd, unrecorded = command(
        "bench/reassign.py",
        [("--topics", r.get("topics")), ("--partitions", r.get("partitions")), ("--rate", MISSING)],
    )
    rows = []
    names = {"add_broker_5": "add a 5th broker", "drain_broker_2": "drain broker 2"}
    cases = r.get("cases") if isinstance(r.get("cases"), dict) else {}
    for key, case in cases.items():
        x = Result("reassign", r.path, case)
        for tool, label in (
            ("kmigrate", "**kmigrate**"),
            ("kafka_generate", "`kafka-reassign-partitions --generate`"),
        ):
            own = tool == "kmigrate"
            rows.append(
                [
                    names.get(key, key) if own else "",
                    label,
                    num(x.get(f"{tool}.replicas_moved")),
                    num(x.get(f"{tool}.mib_moved"), 1),
                    num(x.get(f"{tool}.replica_spread")),
                    num(x.get(f"{tool}.leader_spread")),
                    num(x.get(f"{tool}.mib_spread"), 1),
                    num(x.get("apply_s"), 1, " s") if own else "",
                    pair(x.get("p99_ms_before"), x.get("p99_ms_during"), 0, " ms") if own else "",
                    num(
                        len(x.get("throttles_left"))
                        if isinstance(x.get("throttles_left"), list)
                        else MISSING
                    )
                    if own
                    else "",
                ]
            )
    header = [
        "case",
        "plan",
        "replicas moved",
        "MiB moved",
        "replica spread",
        "preferred-leader spread",
        "MiB spread",
        "apply",
        "producer p99 before / during",
        "throttles left",
    ]
    return blocks(
        caption(r, cmd, unrecorded),
        table(header, rows, "llrrrrrrrr"),
        "(spread: most minus fewest per broker after the plan.)",
        _same_plan(cases, r.path),
    )


def _same_plan(cases: dict[str, Any], path: Path) -> str:
    """kmigrate's apply beside Kafka's tool on the same plan file, same run."""
    names = {"add_broker_5": "add a 5th broker", "drain_broker_2": "drain broker 2"}
    rows = []
    for key, case in cases.items():
        x = Result("reassign", path, case)
        rows.append(
            [
                names.get(key, key),
                num(x.get("apply_s"), 1, " s"),
                pair(x.get("p99_ms_before"), x.get("p99_ms_during"), 0, " ms"),
                num(x.get("kafka_execute.apply_s"), 1, " s"),
                pair(
                    x.get("kafka_execute.p99_ms_before"),
                    x.get("kafka_execute.p99_ms_during"),
                    0,
                    " ms",
                ),
                num(x.get("kafka_execute.p99_ms_with_election"), 0, " ms"),
            ]
        )
    header = [
        "case",
        "kmigrate apply (leaders elected)",
        "producer p99 before / during",
        "`kafka-reassign-partitions --execute`",
        "producer p99 before / during",
        "then `kafka-leader-election`: p99",
    ]
    return (
        "The same plan file run by Kafka's own tool in the same run, at the throttle "
        "kmigrate chose, each from the same placement after a warm-up move:\n\n"
        + table(header, rows, "lrrrrr")
    )


def leader_change(results: list[Result]) -> str:
    """Per setting of replica.fetch.backoff.ms, each election's longest producer waits."""
    r = results[-1]
    cmd, unrecorded = command("bench/leader_change.py", [("--rate", r.get("rate"))])
    rows = []
    settings = r.get("settings") if isinstance(r.get("settings"), dict) else {}
    for name, elections in settings.items():
        for i, e in enumerate(elections if isinstance(elections, list) else []):
            x = Result("leader-change", r.path, e)
            rows.append(
                [
                    f"`replica.fetch.backoff.ms` {name}" if i == 0 else "",
                    "1 (fresh cluster)" if i == 0 else str(i + 1),
                    num(x.get("librdkafka_longest_ms"), 0, " ms"),
                    num(x.get("librdkafka_median_partition_ms"), 0, " ms"),
                    num(x.get("java_longest_ms"), 0, " ms"),
                ]
            )
    header = [
        "brokers",
        "election",
        "librdkafka: slowest partition",
        "librdkafka: median partition",
        "Kafka's Java producer: longest",
    ]
    return blocks(caption(r, cmd, unrecorded), table(header, rows, "llrrr"))


def byte_copy_spike(results: list[Result]) -> str:
    """Issue 37's spike: record batches copied as bytes against today's mirror, per case."""
    r = results[-1]
    cmd, unrecorded = command("bench/byte_copy_spike.py", [])
    rows = []
    cases = r.get("cases") if isinstance(r.get("cases"), dict) else {}
    for name, case in cases.items():
        c = Result("byte-copy-spike", r.path, case if isinstance(case, dict) else {})
        copy = Result("byte-copy-spike", r.path, c.get("byte_copy") or {})
        today = Result("byte-copy-spike", r.path, c.get("mirror_today") or {})
        ceiling = Result("byte-copy-spike", r.path, c.get("consumer_performance") or {})
        rows.append(
            [
                f"`{name}`",
                num(copy.get("records_per_s")),
                num(copy.get("cpu_s_per_mb"), 4, " s"),
                num(today.get("records_per_s")),
                num(today.get("cpu_s_per_mb"), 4, " s"),
                num(ceiling.get("records_per_s")),
            ]
        )
    header = [
        "case",
        "byte copy: records/s",
        "CPU per MB",
        "today's mirror: records/s",
        "CPU per MB",
        "ConsumerPerformance: records/s",
    ]
    return blocks(caption(r, cmd, unrecorded), table(header, rows, "lrrrrr"))


def reassign_scale(results: list[Result]) -> str:
    r = results[-1]
    cmd, unrecorded = command("bench/reassign_scale.py", [])
    rows = []
    for c in r.get("cases") if isinstance(r.get("cases"), list) else []:
        x = Result("reassign-scale", r.path, c)
        shape = (
            f"{num(c.get('brokers'))} brokers ({num(c.get('added'))} new), "
            f"{num(c.get('racks'))} racks, {num(c.get('replicas'))} replicas"
        )
        for who, key in (
            ("planner", "planner"),
            ("planner, `--balance replicas`", "replicas_only"),
            ("planner before (commit " + str(x.get("before.commit")) + ")", "before"),
        ):
            if x.get(key) is MISSING:
                continue
            rows.append(
                [
                    shape,
                    who,
                    num(x.get(f"{key}.seconds"), 2, " s"),
                    num(x.get(f"{key}.cpu_seconds"), 2, " s"),
                    num(x.get(f"{key}.replicas_moved")),
                    num(x.get(f"{key}.gb_moved"), 1, " GB"),
                    change(x, key, "replicas"),
                    change(x, key, "leaders"),
                    change(x, key, "bytes_off_mean_pct", 1),
                ]
            )
    header = [
        "case",
        "code",
        "wall",
        "CPU",
        "replicas moved",
        "bytes moved",
        "replica spread",
        "leader spread",
        "bytes: furthest broker from the mean, %",
    ]
    goal = r.get("goal_s")
    met = r.get("goal_met")
    verdict = (
        ""
        if goal is MISSING
        else f"\n\nGoal: the 50-broker plan under {num(goal)} s: **{'met' if met else 'missed'}**."
    )
    return f"{caption(r, cmd, unrecorded)}\n\n{table(header, rows, 'llrrrrrrr')}{verdict}"


def killpoints(results: list[Result]) -> str:
    r = results[-1]
    runs = r.get("runs") if isinstance(r.get("runs"), list) else []
    rows = []
    for run in runs:
        kills = run.get("kills", [])
        out = run.get("outcome", {})
        rows.append(
            [
                f"`{run.get('operation', NOT_RECORDED)}`"
                + (f", {run['controllers']} controllers" if run.get("controllers") else ""),
                str(run.get("seed", NOT_RECORDED)),
                num(len(kills)),
                num(out.get("acknowledged", MISSING)),
                killpoint_verdict(out),
                num(out.get("minutes", MISSING), 1),
            ]
        )
    cmd, unrecorded = command(
        "bench/killpoints.py --operation OPERATION --seed SEED",
        [("--random", MISSING), ("--rate", MISSING)],
    )
    cmd_note = "OPERATION and SEED: each row's"
    header = ["operation", "seed", "kills", "acknowledged records", "outcome", "minutes"]
    return (
        f"{caption(r, cmd, unrecorded)} ({cmd_note})\n\n{table(header, rows, 'lrrrlr')}\n\n"
        '"All held": every acknowledged record once and in order, the group read all of them, '
        "the metadata (and authorization probes, where the cluster has an authorizer) as "
        "before, and every command finished when run again."
    )


def killpoint_verdict(out: dict[str, Any]) -> str:
    """'all held', or what held and how the run failed (its first words)."""
    if out.get("ok"):
        return "all held"
    held = (
        out.get("metadata") == "identical"
        and not out.get("group_missed")
        and not out.get("produce_failed")
    )
    failure = str(out.get("resume_failure") or "see the results file").split(":")[0]
    return ("data and metadata held; " if held else "") + f"not finished: {failure}"


def cli_help(results: list[Result]) -> str:
    r = results[-1]
    cmd, unrecorded = command("bench/cli_help.py", [("--repeat", r.get("repeat"))])
    found = r.get("helps")
    helps: dict[str, Any] = found if isinstance(found, dict) else {}
    anchor = r.get("python_start")
    start = anchor.get("median_s", MISSING) if isinstance(anchor, dict) else MISSING

    def row(name: str, timed: Any) -> list[str]:
        timed = timed if isinstance(timed, dict) else {}
        median = timed.get("median_s", MISSING)
        return [
            name,
            num(median, 3, " s"),
            num(timed.get("p90_s", MISSING), 3, " s"),
            num(timed.get("cpu_median_s", MISSING), 3, " s"),
            ratio(median, start),
        ]

    rows = [row("`python -c pass` (the interpreter alone)", anchor)]
    rows += [row("`kafka-topics --help` (Kafka's TopicCommand)", r.get("kafka_topics_help"))]
    rows += [row(f"`{name}`", helps[name]) for name in helps]
    header = ["command", "median", "p90", "CPU (median)", "median vs `python -c pass`"]
    under = r.get("all_under_goal")
    verdict = "yes" if under is True else ("no" if under is False else NOT_RECORDED)
    goal = (
        f"Every median under {num(r.get('goal_s'), 1, ' s')}: {verdict} (slowest: "
        f"`{r.get('slowest')}`, {num(r.get('slowest_median_s'), 3, ' s')}; "
        f"{num(r.get('slowest_vs_kafka_topics'), 2, TIMES)} the time of `kafka-topics --help`)."
    )
    return blocks(caption(r, cmd, unrecorded), table(header, rows), goal)


RENDERERS: dict[str, Callable[[list[Result]], str]] = {
    "mirror": mirror,
    "groups": groups,
    "verify": verify,
    "scale": scale,
    "topology-scale": topology,
    "groups-scale": groups_scale,
    "zk-move": zk_move,
    "kraft-migration": kraft,
    "gateway": gateway,
    "gateway-migration": gateway_migration,
    "reassign": reassign,
    "reassign-scale": reassign_scale,
    "leader-change": leader_change,
    "byte-copy-spike": byte_copy_spike,
    "killpoints": killpoints,
    "cli-help": cli_help,
}


# ---------------------------------------------------------------------------- the hook


def fill(markdown: str, results_dir: Path) -> str:
    """The page with every placeholder replaced by its tables."""
    by_kind = load_results(results_dir)

    def replace(match: re.Match[str]) -> str:
        kind = match[1]
        renderer = RENDERERS.get(kind)
        if renderer is None:
            log.warning("benchmarks: unknown table kind %r in %s", kind, PAGE)
            return f"*(unknown benchmark table `{kind}`)*"
        results = by_kind.get(kind)
        if not results:
            log.warning("benchmarks: no bench/results file of kind %r", kind)
            return f"*(no results file for `{kind}` in `bench/results/`)*"
        return renderer(results)

    return PLACEHOLDER.sub(replace, markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs event: fill the benchmark page's tables; other pages pass unchanged."""
    if page.file.src_uri != PAGE:
        return markdown
    results_dir = Path(config["docs_dir"]).resolve().parent / "bench" / "results"
    return fill(markdown, results_dir)

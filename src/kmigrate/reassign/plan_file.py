"""The plan file: the JSON `kafka-reassign-partitions` reads and writes (version 1,
partitions with their new replicas), plus kmigrate's own section: the cluster it was
made for, the goal, the replicas before, and the summary. Pure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kmigrate.config import read_user_file
from kmigrate.errors import ConfigError
from kmigrate.reassign.model import Spread
from kmigrate.reassign.planner import Goal, Move, ReassignPlan

Key = tuple[str, int]


def to_json(plan: ReassignPlan, cluster: str) -> str:
    body = {
        "version": 1,
        "partitions": [
            {"topic": m.topic, "partition": m.partition, "replicas": list(m.after),
             "log_dirs": ["any"] * len(m.after)}
            for m in plan.moves
        ],
        "kmigrate": {
            "cluster": cluster,
            "cluster_id": plan.cluster_id,
            "goal": plan.goal.describe(),
            "before": [
                {"topic": m.topic, "partition": m.partition, "replicas": list(m.before),
                 "size_bytes": m.size_bytes}
                for m in plan.moves
            ],
            "summary": summary(plan),
        },
    }  # fmt: skip
    return json.dumps(body, indent=2) + "\n"


def summary(plan: ReassignPlan) -> dict[str, Any]:
    return {
        "partitions_moved": len(plan.moves),
        "replicas_moved": plan.replicas_moved,
        "bytes_to_copy": plan.bytes_to_copy,
        "brokers": spread_table(plan.before, plan.after),
    }


def spread_table(before: Spread, after: Spread) -> dict[str, dict[str, int]]:
    brokers = sorted({*before.replicas, *after.replicas})
    return {
        str(b): {
            "replicas_before": before.replicas.get(b, 0),
            "replicas_after": after.replicas.get(b, 0),
            "leaders_before": before.leaders.get(b, 0),
            "leaders_after": after.leaders.get(b, 0),
            "bytes_before": before.bytes.get(b, 0),
            "bytes_after": after.bytes.get(b, 0),
        }
        for b in brokers
    }


SHAPE = '{"version": 1, "partitions": [{"topic", "partition", "replicas"}, ...]}'


def parse_assignment(
    text: str, where: str, *, allow_empty: bool = False
) -> dict[Key, tuple[int, ...]]:
    """The partitions and new replicas of a reassignment JSON (kmigrate's or
    kafka-reassign-partitions'); a bad one is one line naming the file and the field."""
    body = _json(text, where)
    partitions = body.get("partitions")
    if not isinstance(partitions, list):
        raise ConfigError(f"{where}: 'partitions' must be a list; it needs {SHAPE}")
    found: dict[Key, tuple[int, ...]] = {}
    for i, entry in enumerate(partitions):
        key, replicas = _entry(entry, f"{where}: partitions[{i}]")
        if key in found:
            raise ConfigError(f"{where}: partitions[{i}]: {key[0]}[{key[1]}] is listed twice")
        if not replicas or len(set(replicas)) != len(replicas):
            raise ConfigError(
                f"{where}: partitions[{i}].replicas must list distinct broker ids (at least one)"
            )
        found[key] = replicas
    if not found and not allow_empty:
        raise ConfigError(f"{where} names no partitions")
    return found


def _json(text: str, where: str) -> dict[str, Any]:
    try:
        body = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{where} is not JSON ({exc}); it needs {SHAPE}") from None
    if not isinstance(body, dict):
        raise ConfigError(f"{where} is not a reassignment file; it needs {SHAPE}")
    return body


def _entry(entry: object, at: str) -> tuple[Key, tuple[int, ...]]:
    """One partition entry's (topic, partition) and replicas (sizes too, in kmigrate's
    section), with the field named when one is missing or wrong."""
    if not isinstance(entry, dict):
        raise ConfigError(f"{at} must be an object with topic, partition and replicas")
    for field in ("topic", "partition", "replicas"):
        if field not in entry:
            raise ConfigError(f"{at} has no '{field}'")
    topic, partition, replicas = entry["topic"], entry["partition"], entry["replicas"]
    if not isinstance(topic, str) or not topic:
        raise ConfigError(f"{at}.topic must be a topic name")
    if not _whole(partition):
        raise ConfigError(f"{at}.partition must be a partition number (0 or more)")
    if not isinstance(replicas, list) or not all(_whole(b) for b in replicas):
        raise ConfigError(f"{at}.replicas must be a list of broker ids (0 or more)")
    return (topic, int(partition)), tuple(int(b) for b in replicas)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def load(path: Path) -> tuple[dict[str, Any], list[Move]]:
    """kmigrate's section and the moves of a plan file."""
    return load_text(read_user_file(path, "reassignment plan"), str(path))


def load_text(text: str, where: str = "the stored plan") -> tuple[dict[str, Any], list[Move]]:
    """A plan kmigrate wrote may move nothing (the goal was already met)."""
    body = _json(text, where)
    mine = body.get("kmigrate", {})
    if not isinstance(mine, dict):
        raise ConfigError(f"{where}: 'kmigrate' must be an object (kmigrate's own section)")
    after = parse_assignment(text, where, allow_empty="kmigrate" in body)
    for field in ("cluster", "cluster_id"):
        if mine.get(field) is not None and not isinstance(mine[field], str):
            raise ConfigError(f"{where}: kmigrate.{field} must be a string")
    before = _before(mine.get("before", []), where)
    moves = [
        Move(t, p, before.get((t, p), ((), 0))[0], replicas, before.get((t, p), ((), 0))[1])
        for (t, p), replicas in after.items()
    ]
    return mine, moves


def _before(entries: object, where: str) -> dict[Key, tuple[tuple[int, ...], int]]:
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: kmigrate.before must be a list")
    before: dict[Key, tuple[tuple[int, ...], int]] = {}
    for i, entry in enumerate(entries):
        at = f"{where}: kmigrate.before[{i}]"
        key, replicas = _entry(entry, at)
        size = entry.get("size_bytes", 0) if isinstance(entry, dict) else 0
        if not _whole(size):
            raise ConfigError(f"{at}.size_bytes must be a number of bytes")
        before[key] = (replicas, int(size))
    return before


def file_goal(path: Path) -> Goal:
    text = read_user_file(path, "reassignment file")
    return Goal("file", assignment=parse_assignment(text, str(path)))

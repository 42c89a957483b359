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


def parse_assignment(
    text: str, where: str, *, allow_empty: bool = False
) -> dict[Key, tuple[int, ...]]:
    """The partitions and new replicas of a reassignment JSON (kmigrate's or
    kafka-reassign-partitions')."""
    try:
        body = json.loads(text)
        partitions = body["partitions"]
        found = {
            (str(p["topic"]), int(p["partition"])): tuple(int(b) for b in p["replicas"])
            for p in partitions
        }
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(
            f"{where} is not a reassignment file ({type(exc).__name__}: {exc}); it needs "
            '{"version": 1, "partitions": [{"topic", "partition", "replicas"}, ...]}'
        ) from None
    if not found and not allow_empty:
        raise ConfigError(f"{where} names no partitions")
    return found


def load(path: Path) -> tuple[dict[str, Any], list[Move]]:
    """kmigrate's section and the moves of a plan file."""
    return load_text(read_user_file(path, "reassignment plan"), str(path))


def load_text(text: str, where: str = "the stored plan") -> tuple[dict[str, Any], list[Move]]:
    """A plan kmigrate wrote may move nothing (the goal was already met)."""
    try:
        mine_present = "kmigrate" in json.loads(text)
    except ValueError:
        mine_present = False
    after = parse_assignment(text, where, allow_empty=mine_present)
    body = json.loads(text)
    mine = body.get("kmigrate") or {}
    before = {
        (str(p["topic"]), int(p["partition"])): (tuple(p["replicas"]), int(p.get("size_bytes", 0)))
        for p in mine.get("before", [])
    }
    moves = [
        Move(t, p, before.get((t, p), ((), 0))[0], replicas, before.get((t, p), ((), 0))[1])
        for (t, p), replicas in after.items()
    ]
    return mine, moves


def file_goal(path: Path) -> Goal:
    text = read_user_file(path, "reassignment file")
    return Goal("file", assignment=parse_assignment(text, str(path)))

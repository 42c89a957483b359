"""The reassignment the kill-point sweep runs (bench/killpoints.py): on a 4-broker KRaft
cluster, replication factor 2 -> 3 of the loaded topic and of a heavy one (`reassign
apply --max-moves 2 --wait`, resumed with `--resume` as a user would), then a throttled
move of the heavy topic to 4 replicas cancelled (`reassign cancel`). Expected after: the
topics on the first plan's replicas, every other thing as before, no throttle left."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

from killpoints import SECURE, TOPIC, Command, Setup, _ok, jars

from harness import userview
from harness.killrun import kmigrate
from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce
from kmigrate.model.records import Record
from kmigrate.sandbox import manager
from kmigrate.store import reassignments as stored
from kmigrate.store import store_for

HEAVY = "sweep-heavy"


def reassign_setup(directory: Path) -> Setup:
    manager.up(directory, manager.UpRequest(clusters=["c"], brokers=4, secure=SECURE["on"]))
    config = directory / "clusters.yaml"
    settings = load_settings(config)
    cluster = settings.cluster("c")
    passwords = userview.furnish(cluster, jars(), topics=4, brokers=4)
    with ClusterAdmin(cluster) as admin:
        admin.create_topic(TOPIC, 6, replication_factor=2)
        admin.create_topic(HEAVY, 4, replication_factor=2)
    payload = os.urandom(100_000)
    produce(cluster, HEAVY, [Record(None, payload + bytes([i % 256]), partition=i % 4)
                             for i in range(120)])  # fmt: skip
    grow, back = directory / "grow.json", directory / "back.json"
    _ok(kmigrate(config, "reassign", "plan", "--cluster", "c", "--replication-factor", "3",
                 "--topics", "sweep-.*", "-o", str(grow)))  # fmt: skip
    apply = kmigrate(config, "reassign", "apply", str(grow), "--throttle", "2MB",
                     "--max-moves", "2", "--wait")  # fmt: skip
    resume = kmigrate(config, "reassign", "apply", str(grow), "--resume", "--wait")
    cancel = kmigrate(config, "reassign", "cancel", "--cluster", "c")

    def state() -> str | None:
        found = stored.current(store_for(load_settings(config)), "c")
        return None if found is None else found.state

    def apply_again() -> list[str] | None:
        now = state()
        return resume if now == "running" else (None if now == "done" else apply)

    def start_cancelled_move() -> None:
        _ok(kmigrate(config, "reassign", "plan", "--cluster", "c", "--replication-factor",
                     "4", "--topics", HEAVY, "-o", str(back)))  # fmt: skip
        _ok(kmigrate(config, "reassign", "apply", str(back), "--throttle", "100KB"))

    planned = {
        (p["topic"], str(p["partition"])): sorted(p["replicas"])
        for p in json.loads(grow.read_text())["partitions"]
    }

    def expect(before: userview.Picture) -> userview.Picture:
        topics = {t: dict(ps) for t, ps in before.metadata.topics.items()}
        for (topic, partition), replicas in planned.items():
            if topic in topics:
                topics[topic][partition] = replicas
        return replace(before, metadata=replace(before.metadata, topics=topics))

    return Setup(
        directory,
        cluster,
        [Command(apply, apply_again, 6.0),
         Command(cancel, lambda: cancel if state() == "running" else None, 2.0,
                 before=start_cancelled_move)],
        expect=expect,
        normalize=_sorted_replicas,
        passwords=passwords,
    )  # fmt: skip


def _sorted_replicas(picture: userview.Picture) -> userview.Picture:
    """Replica sets, not orders: a cancel restores the set, the leader may differ."""
    topics = {t: {p: sorted(r) for p, r in ps.items()} for t, ps in picture.metadata.topics.items()}
    return replace(picture, metadata=replace(picture.metadata, topics=topics))

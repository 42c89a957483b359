"""The guided migration the kill-point sweep runs (bench/killpoints.py): a topic under
steady production on the sandbox's `source` copied to `target` and moved over with its
consumer group: `migrate start` (swept while producing), `migrate consumers` and, once the
producer stopped (promote waits for a quiet topic), `migrate promote`.

Expected after: the source reads as before (kmigrate changes nothing there); the target's
copy equals the source record by record in every partition; the moved group's target
commits equal its source commits (a copy from offset 0 keeps offsets)."""

from __future__ import annotations

import time
from pathlib import Path

import yaml
from killpoints import GROUP, SECURE, TOPIC, Command, Setup, _ok, jars

from harness import userview
from harness.killrun import kmigrate
from kmigrate.config import ClusterConfig, load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import read_partition
from kmigrate.model.cluster import TopicPartitionOffset
from kmigrate.sandbox import manager

MOVED = "sweep-moved"  # an idle group the migration moves (the live one keeps reading)
NAME = "sweep"


def migrate_setup(directory: Path) -> Setup:
    manager.up(directory, manager.UpRequest(secure=SECURE["on"]))
    raw = yaml.safe_load((directory / "clusters.yaml").read_text())
    raw["env_file"] = str(directory / "secrets.env")
    raw["store"] = {"url": f"sqlite:///{directory / 'kmigrate.db'}"}
    raw["spark"] = {"master": "local[2]", "conf": {}}
    config = directory / "kmigrate.yaml"
    config.write_text(yaml.safe_dump(raw))
    settings = load_settings(config)
    source, target = settings.cluster("source"), settings.cluster("target")
    passwords = userview.furnish(source, jars(), topics=3, brokers=1)
    with ClusterAdmin(source) as admin:
        admin.create_topic(TOPIC, 3, replication_factor=1, configs={"retention.ms": "604800001"})
        admin.alter_group_offsets(MOVED, [TopicPartitionOffset(TOPIC, p, 0) for p in range(3)])
    plan = directory / "plan.yaml"
    _ok(kmigrate(config, "plan", "new", "--source", "source", "--target", "target", "--topics",
                 TOPIC, "--groups", MOVED, "--name", NAME, "-o", str(plan)))  # fmt: skip
    body = yaml.safe_load(plan.read_text())
    plan.write_text(yaml.safe_dump({**body, "quiet_period_s": 2.0}, sort_keys=False))
    start = kmigrate(config, "migrate", "start", str(plan))
    consumers = kmigrate(
        config, "migrate", "consumers", "--groups", MOVED, "--wait", "--migration", NAME
    )
    promote = kmigrate(config, "migrate", "promote", "--topics", TOPIC, "--migration", NAME)

    def in_sync() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            status = _ok(kmigrate(config, "migrate", "status", "--json", "--migration", NAME))
            if '"IN_SYNC"' in status:
                return
            time.sleep(2)
        raise SystemExit("the mirror did not catch up in 300 s")

    return Setup(
        directory,
        source,
        [Command(start, lambda: start, 15.0),
         Command(consumers, lambda: consumers, 4.0, before=in_sync),
         Command(promote, lambda: promote, 6.0)],
        ignore=(TOPIC, GROUP, MOVED),
        stop_load_before=2,
        checks=lambda: _copy_problems(source, target),
        passwords=passwords,
    )  # fmt: skip


def _copy_problems(source: ClusterConfig, target: ClusterConfig) -> list[str]:
    """The target's copy of the topic equals the source's record by record; the moved
    group commits the same offsets on both."""
    problems: list[str] = []
    with ClusterAdmin(source) as src, ClusterAdmin(target) as tgt:
        ends = {w.partition: w.high for w in src.watermarks(TOPIC)}
        target_ends = {w.partition: w.high for w in tgt.watermarks(TOPIC)}
        commits = {(o.partition, o.committed) for o in src.committed_offsets(MOVED)}
        moved = {(o.partition, o.committed) for o in tgt.committed_offsets(MOVED)}
    for p, end in sorted(ends.items()):
        theirs = [r.value for r in read_partition(target, TOPIC, p, 0, target_ends.get(p, 0))]
        ours = [r.value for r in read_partition(source, TOPIC, p, 0, end)]
        if theirs != ours:
            problems.append(f"{TOPIC}[{p}]: target holds {len(theirs)} records, source {len(ours)}")
    if commits != moved:
        problems.append(f"group {MOVED}: source commits {sorted(commits)}, target {sorted(moved)}")
    return problems

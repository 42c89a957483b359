"""`groups sync` follows a running group and leaves target members alone; `groups migrate`
refuses what is unsafe and changes nothing; failover and by-timestamp translations say
what may repeat; `groups create` positions a new group."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml
from confluent_kafka import Consumer, TopicPartition

from harness.helpers import run_cli, unique, wait_for
from kmigrate.config import ClusterConfig, load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce
from kmigrate.model.cluster import TopicPartitionOffset
from kmigrate.model.records import Record
from kmigrate.store import store_for
from kmigrate.store.offsets import load_partitions
from tests.integration.conftest import Clusters
from tests.integration.groups.conftest import LINK, records, topic_of
from tests.integration.groups.consumers import (
    consume_and_commit,
    consume_to_end,
    take_cut,
)
from tests.integration.mirror.harness import MirrorProcess, wait_caught_up


def _committed(cluster: ClusterConfig, group: str) -> dict[tuple[str, int], int]:
    with ClusterAdmin(cluster) as admin:
        return {(o.topic, o.partition): o.committed for o in admin.committed_offsets(group)}


def _translated(config: Path, source_commits: dict[tuple[str, int], int]) -> dict:
    states = {
        (s.topic, s.partition): s for s in load_partitions(store_for(load_settings(config)), LINK)
    }
    return {
        key: states[key].map.translate(offset, states[key].target_start).target_offset
        for key, offset in source_commits.items()
    }


@contextmanager
def _member(cluster: ClusterConfig, topic: str, group: str) -> Iterator[Consumer]:
    """An active member of ``group`` (joined, assigned, never committing)."""
    consumer = Consumer({**cluster.as_librdkafka(), "group.id": group, "enable.auto.commit": False})
    consumer.subscribe([topic])
    wait_for(
        lambda: consumer.poll(0.2) is not None or consumer.assignment(),
        timeout=60,
        message=f"consumer joined {group}",
    )
    try:
        yield consumer
    finally:
        consumer.close()


def _one_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_sync_follows_a_running_group_and_leaves_target_members_alone(
    mirror: MirrorProcess, clusters: Clusters
) -> None:
    topic, group = topic_of("sync"), unique("g-sync")
    wait_caught_up(mirror, clusters.source, [topic])
    sync = subprocess.Popen(
        [sys.executable, "-m", "kmigrate", "--config", str(mirror.config), "groups", "sync",
         "--link", LINK, "--groups", group, "--interval", "0.3", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    rounds: list[dict] = []
    reader = threading.Thread(
        target=lambda: rounds.extend(json.loads(line) for line in sync.stdout or ()), daemon=True
    )
    reader.start()

    def target_follows() -> bool:
        source = _committed(clusters.source, group)
        return bool(source) and _committed(clusters.target, group) == _translated(
            mirror.config, source
        )

    try:
        with _member(clusters.source, topic, group) as running:
            # The group runs on the source, committing as it goes; sync follows each commit.
            for position in (300, 650):
                running.commit(
                    offsets=[TopicPartition(topic, p, position + p) for p in (0, 1)],
                    asynchronous=False,
                )
                wait_for(target_follows, timeout=60, message="target group follows the source")
        # A reset on the source (to the start) is followed too.
        with ClusterAdmin(clusters.source) as admin:
            admin.alter_group_offsets(group, [TopicPartitionOffset(topic, p, 0) for p in (0, 1)])
        wait_for(target_follows, timeout=60, message="target group follows the reset")
        before = _committed(clusters.target, group)
        assert set(before.values()) == {0}
        with _member(clusters.target, topic, group):
            seen = len(rounds)
            with ClusterAdmin(clusters.source) as admin:
                admin.alter_group_offsets(
                    group, [TopicPartitionOffset(topic, p, 500) for p in (0, 1)]
                )
            wait_for(
                lambda: any(
                    g["group"] == group and "member" in (g["skipped"] or "")
                    for r in rounds[seen:]
                    for g in r["groups"]
                ),
                timeout=60,
                message="sync reports the group as left alone",
            )
            assert _committed(clusters.target, group) == before
    finally:
        sync.terminate()
        assert sync.wait(30) == 0, sync.stderr.read() if sync.stderr else ""


def test_migrate_refuses_unsafe_moves_and_changes_nothing(
    mirror: MirrorProcess, clusters: Clusters
) -> None:
    topic, group = topic_of("plain"), unique("g-refuse")
    wait_caught_up(mirror, clusters.source, [topic])
    consume_and_commit(clusters.source, topic, group, 10)
    config = str(mirror.config)
    args = ("groups", "migrate", "--link", LINK, "--group", group)

    dry = run_cli(*args, "--dry-run", config=config)
    assert dry.code == 0 and "dry run: nothing changed" in dry.stderr, dry.stdout + dry.stderr
    unasked = run_cli(*args, config=config)  # a script without --yes: shown, not done
    assert unasked.code == 0 and "rerun with --yes" in unasked.stderr, unasked.stderr
    assert _committed(clusters.target, group) == {}

    with _member(clusters.source, topic, group):
        refused = run_cli(*args, "--yes", config=config)
    assert refused.code == 5
    assert "active member(s) on source" in _one_error(refused.stderr)

    with _member(clusters.target, topic, group):
        refused = run_cli(*args, "--yes", config=config)
    assert refused.code == 5
    assert "active member(s) on target" in _one_error(refused.stderr)
    assert _committed(clusters.target, group) == {}

    # A position far beyond what the mirror has read.
    ahead = unique("g-ahead")
    with ClusterAdmin(clusters.source) as admin:
        admin.alter_group_offsets(ahead, [TopicPartitionOffset(topic, 0, 10**9)])
    refused = run_cli(*args[:-1], ahead, "--yes", config=config)
    assert refused.code == 5
    assert "has not reached" in _one_error(refused.stderr) and "--wait" in refused.stderr
    waited = run_cli(*args[:-1], ahead, "--yes", "--wait", "--timeout", "2", config=config)
    assert waited.code == 5 and "did not reach" in _one_error(waited.stderr)
    assert _committed(clusters.target, ahead) == {}

    applied = run_cli(*args, "--yes", config=config)
    assert applied.code == 0, applied.stderr
    again = run_cli(*args, "--yes", "--json", config=config)
    assert again.code == 0 and json.loads(again.stdout)["outcome"] == "already-done"

    # Consumers ran on the target after the move: migrating again must not rewind them.
    consume_and_commit(clusters.target, topic, group, 5)
    moved = run_cli(*args, "--yes", config=config)
    assert moved.code == 5 and "moved on" in _one_error(moved.stderr)


def test_failover_translates_the_last_known_commit_and_says_what_may_repeat(
    mirror: MirrorProcess, clusters: Clusters, tmp_path: Path
) -> None:
    topic, group = topic_of("plain"), unique("g-failover")
    wait_caught_up(mirror, clusters.source, [topic])
    first = consume_and_commit(clusters.source, topic, group, 100)
    seen = run_cli(
        "groups", "translate", "--link", LINK, "--group", group, config=str(mirror.config)
    )
    assert seen.code == 0, seen.stderr
    # The group goes on consuming on the source; then the source is lost.
    later = consume_and_commit(clusters.source, topic, group, 50)
    cut = take_cut(clusters.source, topic, group, first + later)
    raw = yaml.safe_load(mirror.config.read_text())
    raw["clusters"]["source"]["bootstrap_servers"] = "127.0.0.1:1"
    raw["clusters"]["source"]["timeout_s"] = 2
    lost = tmp_path / "lost-source.yaml"
    lost.write_text(yaml.safe_dump(raw))

    shown = run_cli("groups", "translate", "--link", LINK, "--group", group, "--json",
                    config=str(lost))  # fmt: skip
    assert shown.code == 0, shown.stderr
    plan = json.loads(shown.stdout)
    assert plan["source"] is None and plan["source_error"]
    assert all(p["reason"] == "source-unreachable" and not p["exact"] for p in plan["partitions"])
    bound = sum(p["may_repeat"] for p in plan["partitions"])
    refused = run_cli("groups", "migrate", "--link", LINK, "--group", group, "--yes",
                      config=str(lost))  # fmt: skip
    assert refused.code == 3, refused.stderr
    applied = run_cli("groups", "migrate", "--link", LINK, "--group", group, "--yes",
                      "--failover", config=str(lost))  # fmt: skip
    assert applied.code == 0, applied.stderr

    continued = consume_to_end(clusters.target, topic, group)
    # Nothing after the real cut is skipped; exactly the 50 unseen records repeat.
    assert set(cut.expected_rest()) <= set(continued)
    repeated = set(continued) & set(first + later)
    assert repeated == set(later)
    assert len(repeated) <= bound


def test_by_timestamp_translation_never_skips_and_bounds_repeats(clusters: Clusters) -> None:
    topic, group = unique("ts"), unique("g-ts")
    base = int(time.time() * 1000) - 3_600_000  # recent: retention must not delete it
    # Partition 0: strictly increasing timestamps; partition 1: pairs share a timestamp.
    data = [Record(None, f"p0-{i}".encode(), (), base + i * 10, 0) for i in range(200)]
    data += [Record(None, f"p1-{i}".encode(), (), base + (i // 2) * 10, 1) for i in range(200)]
    for cluster in (clusters.source, clusters.target):  # a copy made by some other tool
        with ClusterAdmin(cluster) as admin:
            admin.create_topic(topic, 2)
        produce(cluster, topic, data)
    with ClusterAdmin(clusters.source) as admin:
        admin.alter_group_offsets(
            group, [TopicPartitionOffset(topic, 0, 77), TopicPartitionOffset(topic, 1, 77)]
        )
    shown = run_cli("groups", "translate", "--by-timestamp", "--source", "source",
                    "--target", "target", "--group", group, "--json",
                    config=str(clusters.config_path))  # fmt: skip
    assert shown.code == 0, shown.stderr
    rows = {p["partition"]: p for p in json.loads(shown.stdout)["partitions"]}
    assert all(r["reason"] == "approximate" and not r["exact"] for r in rows.values())
    assert (rows[0]["target_offset"], rows[0]["may_repeat"]) == (77, 0)
    # 77 shares its timestamp with 76: start at 76 (one repeat), never after 77.
    assert (rows[1]["target_offset"], rows[1]["may_repeat"]) == (76, 1)


def test_create_positions_a_new_group_and_refuses_an_existing_one(
    clusters: Clusters, tmp_path: Path
) -> None:
    topic = unique("create")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, 2)
    produce(clusters.source, topic, records(topic, 0, 40, 2))
    config = str(clusters.config_path)

    def create(group: str, at: str) -> dict[int, int]:
        done = run_cli("groups", "create", "--cluster", "source", "--group", group,
                       "--topics", topic, "--from", at, config=config)  # fmt: skip
        assert done.code == 0, done.stderr
        return {p: o for (_, p), o in _committed(clusters.source, group).items()}

    assert create(unique("g"), "earliest") == {0: 0, 1: 0}
    assert create(unique("g"), "latest") == {0: 20, 1: 20}
    positions = tmp_path / "at.json"
    positions.write_text('{"0": 5, "1": 7}')
    group = unique("g")
    assert create(group, str(positions)) == {0: 5, 1: 7}
    assert consume_to_end(clusters.source, topic, group)[:1] != []

    again = run_cli("groups", "create", "--cluster", "source", "--group", group, "--topics",
                    topic, "--from", "earliest", config=config)  # fmt: skip
    assert again.code == 5 and "already has offsets" in _one_error(again.stderr)
    positions.write_text('{"0": 5}')
    bad = run_cli("groups", "create", "--cluster", "source", "--group", unique("g"), "--topics",
                  topic, "--from", str(positions), config=config)  # fmt: skip
    assert bad.code == 2 and "give an offset for each" in _one_error(bad.stderr)

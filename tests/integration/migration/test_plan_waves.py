"""Waves on real clusters: `plan new` cuts twelve topics read by four groups into the
waves the planner promises, `plan check` estimates each wave, and `migrate ... --wave N`
acts on exactly that wave's topics. No mirror runs: the migration is recorded in the
store as `migrate start` records it, with some topics marked MIRRORING."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.helpers import run_cli, unique, wait_for
from kmigrate.config import load_settings
from kmigrate.errors import KMigrateError
from kmigrate.groups.view import view_group
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce
from kmigrate.migration import sizing
from kmigrate.migration.plan import load_plan
from kmigrate.migration.waves import TopicSize
from kmigrate.model.cluster import TopicPartitionOffset
from kmigrate.model.links import Link
from kmigrate.model.migrations import GroupPhase, TopicPhase
from kmigrate.model.records import Record
from kmigrate.store import store_for
from kmigrate.store.links import save_link
from kmigrate.store.migrations import add_item, save_migration, set_state
from tests.integration.conftest import Clusters
from tests.integration.mirror.harness import mirror_config

VALUE = 1000  # bytes of each record's value (no key, no headers)
# Records per topic; groups read t00+t01, t02+t03, and t04+t05+t06 (g2 and g3 share t05).
RECORDS = [25, 25, 40, 40, 50, 50, 50, 40, 30, 15, 5, 0]
READS = {"g0": (0, 1), "g1": (2, 3), "g2": (4, 5), "g3": (5, 6)}


@pytest.fixture(scope="module")
def estate(clusters: Clusters, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    folder = tmp_path_factory.mktemp("waves")
    prefix = unique("wave")
    topics = [f"{prefix}-t{i:02d}" for i in range(len(RECORDS))]
    with ClusterAdmin(clusters.source) as admin:
        for topic, count in zip(topics, RECORDS, strict=True):
            admin.create_topic(topic, 1)
            if count:
                produce(clusters.source, topic, [Record(None, bytes(VALUE))] * count)
        for group, read in READS.items():
            admin.alter_group_offsets(
                f"{prefix}-{group}", [TopicPartitionOffset(topics[i], 0, 1) for i in read]
            )
    with ClusterAdmin(clusters.target) as target:
        # A fresh cluster's first group request creates __consumer_offsets (seconds on a
        # busy machine); `plan check` asks the target about the groups, which is not what
        # this test is about.
        wait_for(lambda: _groups_answer(target), timeout=60, message="target groups answer")
    return {"folder": folder, "prefix": prefix, "topics": topics}


def _groups_answer(admin: ClusterAdmin) -> bool:
    try:
        view_group(admin, unique("warm-up"))
    except KMigrateError:
        return False
    return True


def test_plan_new_cuts_waves_that_keep_each_groups_topics_together(
    clusters: Clusters, estate: dict[str, object]
) -> None:
    folder, prefix = estate["folder"], estate["prefix"]
    assert isinstance(folder, Path) and isinstance(prefix, str)
    config = mirror_config(clusters.config_path, folder)
    plan_path = folder / "plan.yaml"
    # 100 records a wave: 10 s at 10 records/s (bytes stay far below the default 50GB)
    made = run_cli(
        "plan", "new", "--source", "source", "--target", "target", "--topics", f"{prefix}-t.*",
        "--groups", f"{prefix}-g.*", "--mirror-rate", "10", "--wave-duration", "10s",
        "--name", prefix, "-o", str(plan_path), config=str(config),
    )  # fmt: skip
    assert made.code == 0, made.stderr
    plan = load_plan(plan_path)
    t = [f"{prefix}-t{i:02d}" for i in range(len(RECORDS))]
    g = [f"{prefix}-g{i}" for i in range(4)]
    # First fit, largest first (t04-t06 alone are 150 records: a wave of their own, last),
    # then the smallest wave first.
    assert [(w.topics, w.groups, w.records) for w in plan.waves] == [
        ([t[8]], [], 30),
        ([t[0], t[1], t[7]], [g[0]], 90),
        ([t[2], t[3], t[9], t[10], t[11]], [g[1]], 100),
        ([t[4], t[5], t[6]], [g[2], g[3]], 150),
    ]
    assert plan.waves[3].over_bounds is not None
    assert "longer than one wave's 10s" in plan.waves[3].over_bounds
    assert plan.wave_sizing is not None
    assert (plan.wave_sizing.bytes_from, plan.wave_sizing.rate_from) == ("log-dirs", "given")
    for w in plan.waves:  # log-dir bytes: the values plus Kafka's framing, not more
        assert w.records * VALUE <= w.bytes <= w.records * VALUE * 1.2 + 200
        assert w.copy_s == w.records / 10
    shown = " ".join(made.stdout.split())
    assert "12 topic(s), 4 group(s), 0 ACL(s), " in shown  # then the session's quotas
    assert " to copy, 4 waves" in shown
    assert "at 10 records/s (given); bytes from log-dirs" in shown
    assert f"wave 4: 3 topics read together by groups {g[2]}, {g[3]} take ~15s" in shown

    checked = run_cli("plan", "check", str(plan_path), "--sample", "0.5", "--mirror-rate", "10",
                      "--json", config=str(config))  # fmt: skip
    assert checked.code == 0, checked.stderr + checked.stdout
    report = json.loads(checked.stdout)
    assert [(w["wave"], w["backlog"]) for w in report["waves"]] == [
        (1, 30), (2, 90), (3, 100), (4, 150)
    ]  # fmt: skip
    assert [w["copy_s"] for w in report["waves"]] == [30 / 10, 90 / 10, 100 / 10, 150 / 10]
    week = 7 * 24 * 3600  # the topics' default retention; their records are minutes old
    left = {e["topic"]: e["retention_left_s"] for e in report["estimates"]}
    assert left[t[11]] is None  # empty: nothing to delete
    assert all(week - 600 < left[name] <= week for name in t[:11]), left

    _start_checks_only_its_wave(config, plan_path, t)
    _migrate_selects_a_wave(config, plan_path, prefix, t)


def _start_checks_only_its_wave(config: Path, plan_path: Path, t: list[str]) -> None:
    """A plan that went stale in waves 1 and 2: starting wave 1 is refused for wave 1's
    problem only, and nothing starts."""
    stale = plan_path.with_name("stale.yaml")
    raw = yaml.safe_load(plan_path.read_text())
    for topic in raw["topics"]:
        if topic["name"] in (t[8], t[0]):
            topic["partitions"] = 5
    stale.write_text(yaml.safe_dump(raw, sort_keys=False))
    ran = run_cli("migrate", "start", str(stale), "--wave", "1", config=str(config))
    assert ran.code == 5, ran.stderr
    assert "the plan has 1 problem(s), nothing started" in ran.stderr
    assert f"topic {t[8]} has 1 partitions on source" in ran.stderr


def _migrate_selects_a_wave(config: Path, plan_path: Path, name: str, t: list[str]) -> None:
    """Record the migration as `migrate start` does, waves 2 and 3 MIRRORING; a rollback
    of wave 3 (a dry run) would touch exactly wave 3's topics."""
    plan = load_plan(plan_path)
    store = store_for(load_settings(config))
    save_migration(store, name, plan.source, plan.target, plan_path.read_text())
    save_link(store, Link(name, plan.source, plan.target, plan.topics_regex([])))
    for topic in plan.topic_names():
        add_item(store, name, "topic", topic, TopicPhase.PLANNED.value)
    for group in plan.groups:
        add_item(store, name, "group", group.name, GroupPhase.ON_SOURCE.value)
    for topic in plan.waves[1].topics + plan.waves[2].topics:
        set_state(store, name, "topic", topic, TopicPhase.MIRRORING.value)
    store.close()
    ran = run_cli("migrate", "rollback", "--wave", "3", "--dry-run", "--json", config=str(config))
    assert ran.code == 0, ran.stderr
    assert json.loads(ran.stdout)["would_roll_back"] == [t[2], t[3], t[9], t[10], t[11]]
    status = run_cli("migrate", "status", "--json", config=str(config))
    assert status.code == 0, status.stderr
    assert (
        f"start wave 1 ({t[8]}): kmigrate migrate start PLAN --wave 1"
        in json.loads(status.stdout)["next"]
    )


def test_without_log_dirs_bytes_are_records_times_a_sampled_record_size(
    clusters: Clusters, estate: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Log dirs and the estimate agree; the estimate is what a principal that may not
    describe log dirs gets, and the plan says so."""
    topics = estate["topics"]
    assert isinstance(topics, list)
    with ClusterAdmin(clusters.source) as admin:
        described = admin.describe_topics(topics[7:9])  # 40 and 30 records
        on_disk = sizing.log_dir_bytes(clusters.source, described)
        assert set(on_disk) == {(topics[7], 0), (topics[8], 0)}
        assert 40 * VALUE <= on_disk[(topics[7], 0)] <= 40 * VALUE * 1.2 + 200
        monkeypatch.setattr(sizing, "log_dir_bytes", lambda *_: {})  # as if refused
        estimated = sizing.measure(admin, described)
    assert estimated.sizes == [
        TopicSize(topics[7], 40 * VALUE, 40),
        TopicSize(topics[8], 30 * VALUE, 30),
    ]
    assert estimated.bytes_from == f"records x {VALUE:,} B sampled"

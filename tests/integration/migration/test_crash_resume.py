"""kill -9 a migration command at a step boundary or a random moment of its step (the
kill-point sweep's seeded chooser, harness/killpoints.py): the next command sees what
was left (refusing other steps while one is half done), the same command finishes it,
and both clusters still match record by record."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from harness.helpers import seeded, wait_for
from harness.killpoints import choose
from harness.killrun import kill_at_point
from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.links import TopicState
from kmigrate.store import store_for
from kmigrate.store.links import link_topics_of
from kmigrate.store.offsets import load_partitions
from tests.integration.conftest import Clusters
from tests.integration.groups.consumers import (
    assert_exactly_once,
    consume_and_commit,
    consume_to_end,
    take_cut,
)
from tests.integration.migration.harness import Migration, fill, new_migration
from tests.integration.mirror.harness import assert_exact_copy, caught_up


def kill_at_random(
    m: Migration, rng: random.Random, marks: list[str | None], span_s: float, *args: str
) -> str:
    """Run `kmigrate ARGS` and kill -9 it at one of ``marks`` (its progress lines; None:
    its start) or a random moment after one, as the kill-point sweep's seeded chooser
    draws it (it may finish first); returns what happened."""
    point = choose(rng, marks, span_s)
    argv = [sys.executable, "-m", "kmigrate", "--config", str(m.config), *args]
    log = m.folder / "killed.log"
    kill = kill_at_point(argv, log, point, timeout_s=240, may_finish=True)
    return f"{args[:2]} {point.describe()}: {kill.where}: {log.read_text()[-500:]}"


def pending(m: Migration) -> str | None:
    return m.states().get(f"topic:{m.topic}", ("", None))[1]


def copy_is_exact(m: Migration) -> int:
    source = m.clusters.source
    wait_for(
        lambda: caught_up(m.config, m.name, source, [m.topic]),
        timeout=180,
        interval=0.5,
        message="the mirror caught up with the source",
    )
    return assert_exact_copy(m.config, m.name, source, m.clusters.target, m.topic)


def test_killed_start_rollback_and_promote_resume_exactly(
    clusters: Clusters, tmp_path: Path
) -> None:
    rng = seeded()
    m = new_migration(clusters, tmp_path, records=6_000, group=False)
    try:
        # start, killed somewhere between the plan check and the mirror's first batch.
        note = kill_at_random(
            m, rng, [None, "starting the mirror"], 14.0, "migrate", "start", str(m.plan)
        )
        m.ok("migrate", "start", str(m.plan))
        assert m.topic_state() in ("MIRRORING", "IN_SYNC"), note
        fill(clusters.source, m.topic, 2_000, first=6_000)  # traffic while mirroring
        assert copy_is_exact(m) == 8_000, note

        # rollback, killed mid-way: another step refuses until rollback is finished.
        note = kill_at_random(
            m, rng, [None, "deleting"], 6.0, "migrate", "rollback", "--topics", m.topic, "--yes"
        )
        if pending(m) == "rollback":
            other = m.cli("migrate", "promote", "--topics", m.topic)
            assert other.code == 5 and "interrupted `rollback`" in other.stderr, other.stderr
        m.ok("migrate", "rollback", "--topics", m.topic, "--yes")
        assert m.states()[f"topic:{m.topic}"] == ("PLANNED", None), note
        store = store_for(load_settings(m.config))
        assert load_partitions(store, m.name, m.topic) == []
        with ClusterAdmin(clusters.target) as admin:
            assert admin.describe_topics_if_present([m.topic]) == []

        # Started again: copied from the beginning, exactly.
        m.ok("migrate", "start", str(m.plan))
        assert copy_is_exact(m) == 8_000
        m.wait_topic("IN_SYNC")

        # promote, killed mid-way (quiet period 1 s), then finished by a second promote.
        note = kill_at_random(
            m,
            rng,
            [None, "checking that no producer writes"],
            5.0,
            "migrate",
            "promote",
            "--topics",
            m.topic,
        )
        m.ok("migrate", "promote", "--topics", m.topic)
        assert m.states()[f"topic:{m.topic}"] == ("PROMOTED", None), note
        (linked,) = link_topics_of(store, m.name)
        assert linked.state is TopicState.PROMOTED
        assert copy_is_exact(m) == 8_000
        outcomes = m.outcomes()
        assert outcomes.count(("promote", "done")) == 1
        assert outcomes.count(("rollback", "done")) == 1
    finally:
        m.stop_mirror()


def test_killed_consumer_moves_there_and_back_resume_at_the_exact_offsets(
    clusters: Clusters, tmp_path: Path
) -> None:
    rng = seeded()
    m = new_migration(clusters, tmp_path, records=6_000, group=True)  # commits at 666
    with ClusterAdmin(clusters.source) as admin:
        # Retention took the first 200 records of each partition: target offsets are
        # source offsets - 200, so a wrong (untranslated) commit would be caught.
        admin.delete_records(m.topic, {p: 200 for p in range(3)})
    try:
        m.ok("migrate", "start", str(m.plan))
        m.wait_topic("IN_SYNC")
        cut = take_cut(clusters.source, m.topic, m.group, [])
        note = kill_at_random(
            m, rng, [None], 4.0, "migrate", "consumers", "--groups", m.group, "--wait"
        )
        m.ok("migrate", "consumers", "--groups", m.group, "--wait")
        assert m.states()[f"group:{m.group}"] == ("MOVED", None), note
        with ClusterAdmin(clusters.target) as admin:
            committed = {o.partition: o.committed for o in admin.committed_offsets(m.group)}
        assert committed == {p: 666 - 200 for p in range(3)}, note
        on_target = consume_and_commit(clusters.target, m.topic, m.group, 900)
        target_cut = take_cut(clusters.target, m.topic, m.group, on_target)
        assert m.outcomes().count(("consumers", "done")) == 1

        # The fallback: rollback, killed at a random moment, moves the group back to the
        # source at the source position of each record it was at on the target.
        note = kill_at_random(
            m, rng, [None, "deleting"], 6.0, "migrate", "rollback", "--topics", m.topic, "--yes"
        )
        m.ok("migrate", "rollback", "--topics", m.topic, "--yes")
        states = m.states()
        assert states[f"group:{m.group}"] == ("ON_SOURCE", None), note
        assert states[f"topic:{m.topic}"] == ("PLANNED", None), note
        back_on_source = consume_to_end(clusters.source, m.topic, m.group)
        assert_exactly_once(target_cut, back_on_source)  # target part, then source again
        assert_exactly_once(cut, on_target + back_on_source)  # source, target, source
    finally:
        m.stop_mirror()

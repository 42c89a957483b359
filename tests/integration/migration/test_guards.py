"""Every guard of the guided migration refuses with one clear line, a non-zero exit code,
and nothing changed: not the states, not the clusters, not the offset map."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Consumer
from sqlalchemy import select, update

from harness.helpers import CliResult, run_cli, unique, wait_for
from kmigrate.config import ClusterConfig, load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.migration.session import locked
from kmigrate.model.links import TopicState
from kmigrate.store import store_for
from kmigrate.store.links import link_topics_of
from kmigrate.store.schema import offset_runs
from tests.integration.conftest import Clusters
from tests.integration.migration.harness import Migration, edit_plan, fill, new_migration

EXIT_NOT_FOUND, EXIT_CONFLICT = 4, 5


def refused(result: CliResult, code: int, fragment: str) -> None:
    assert result.code == code, f"exit {result.code}: {result.stdout}{result.stderr}"
    # Progress lines ("> ...") may come first; the refusal itself is one error line.
    lines = [line for line in result.stderr.splitlines() if not line.startswith("> ")]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and fragment in lines[0], lines[0]
    assert "Traceback" not in result.stderr


def link_state(m: Migration) -> TopicState:
    (topic,) = [t for t in link_topics_of(store_for(load_settings(m.config)), m.name)]
    return topic.state


@pytest.fixture(scope="module")
def started(clusters: Clusters, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Migration]:
    """A migration whose topic is IN_SYNC and whose group is still on the source."""
    m = new_migration(clusters, tmp_path_factory.mktemp("guards"))
    m.ok("migrate", "start", str(m.plan))
    m.wait_topic("IN_SYNC")
    yield m
    m.stop_mirror()


def test_promote_before_the_consumers_moved_is_refused(started: Migration) -> None:
    before = started.states()
    result = started.cli("migrate", "promote", "--topics", started.topic)
    refused(result, EXIT_CONFLICT, f"still read on the source by group(s) {started.group}")
    assert started.states() == before
    assert link_state(started) is TopicState.MIRRORING
    assert ("promote", "refused") in started.outcomes()


def test_retire_before_promote_is_refused_and_the_source_stays(started: Migration) -> None:
    result = started.cli("migrate", "retire", "--topics", started.topic, "--yes")
    refused(result, EXIT_CONFLICT, "retire comes after promote")
    with ClusterAdmin(started.clusters.source) as admin:
        assert admin.describe_topics_if_present([started.topic])


@contextmanager
def member_of(m: Migration, cluster: ClusterConfig) -> Iterator[None]:
    """A live member of the migration's group on ``cluster`` for the duration."""
    consumer = Consumer(
        {**cluster.as_librdkafka(), "group.id": m.group, "enable.auto.commit": False}
    )
    consumer.subscribe([m.topic])
    try:
        wait_for(
            lambda: consumer.poll(0.2) is not None or consumer.assignment(),
            timeout=60,
            message="consumer joined the group",
        )
        yield
    finally:
        consumer.close()


def test_moving_a_group_with_live_consumers_on_the_source_is_refused(started: Migration) -> None:
    with member_of(started, started.clusters.source):
        before = started.states()
        result = started.cli("migrate", "consumers", "--groups", started.group, "--wait")
        refused(result, EXIT_CONFLICT, "active member(s) on source")
        assert started.states() == before
        with ClusterAdmin(started.clusters.target) as admin:
            assert admin.committed_offsets(started.group) == []


def test_a_second_command_refuses_while_another_holds_the_migration(started: Migration) -> None:
    store = store_for(load_settings(started.config))
    with locked(store, started.name, "promote", lambda _m: None):
        result = started.cli("migrate", "rollback", "--topics", started.topic, "--yes")
    refused(
        result, EXIT_CONFLICT, f"migration '{started.name}' is busy: `kmigrate migrate promote`"
    )
    assert started.topic_state() == "IN_SYNC"


def test_unknown_names_are_refused(started: Migration) -> None:
    refused(
        started.cli("migrate", "consumers", "--groups", "no-such-group", "--wait"),
        EXIT_NOT_FOUND,
        "no group of migration",
    )
    refused(
        started.cli("migrate", "promote", "--topics", "no-such-topic"),
        EXIT_NOT_FOUND,
        "no topic of migration",
    )
    refused(
        started.cli("migrate", "status", "--migration", "nope"),
        EXIT_NOT_FOUND,
        "no migration named 'nope'",
    )


def test_after_the_consumers_moved_rollback_is_refused_then_promote_waits_for_quiet(
    started: Migration,
) -> None:
    m = started
    m.ok("migrate", "consumers", "--groups", m.group, "--wait")
    assert m.states()[f"group:{m.group}"] == ("MOVED", None)
    assert m.topic_state() == "CONSUMERS_MOVED"
    # Its consumers run on the target now: a rollback cannot move them back under them.
    with member_of(m, m.clusters.target):
        refused(
            m.cli("migrate", "rollback", "--topics", m.topic, "--yes"),
            EXIT_CONFLICT,
            f"consumer group '{m.group}' has 1 active member(s) on target",
        )
    assert m.states()[f"group:{m.group}"] == ("MOVED", None)
    # The mirror stopped while the source moved on: promote refuses until it runs again.
    m.stop_mirror()
    fill(m.clusters.source, m.topic, 4, first=9_000)
    refused(
        m.cli("migrate", "promote", "--topics", m.topic),
        EXIT_CONFLICT,
        "4 record(s) behind the source and the mirror is stopped",
    )
    assert m.topic_state() == "CONSUMERS_MOVED"
    assert "mirror resumed" in m.ok("migrate", "start", str(m.plan)).stdout
    # A producer still writing to the source: promote refuses after the quiet period.
    stop = threading.Event()

    def produce() -> None:
        n = 10_000
        while not stop.is_set():
            fill(m.clusters.source, m.topic, 5, first=n)
            n += 5
            time.sleep(0.1)  # a slow, steady producer

    writer = threading.Thread(target=produce, daemon=True)
    writer.start()
    try:
        result = m.cli("migrate", "promote", "--topics", m.topic, "--quiet-period", "3")
    finally:
        stop.set()
        writer.join()
    refused(result, EXIT_CONFLICT, f"producers still write to {m.topic}")
    assert m.topic_state() == "CONSUMERS_MOVED"
    assert link_state(m) is TopicState.MIRRORING
    # Producers stopped: promote goes through, and the topic is no longer mirrored.
    m.ok("migrate", "promote", "--topics", m.topic)
    assert m.topic_state() == "PROMOTED"
    assert link_state(m) is TopicState.PROMOTED
    refused(
        m.cli("migrate", "rollback", "--topics", m.topic, "--yes"),
        EXIT_CONFLICT,
        "cannot be rolled back",
    )


def test_retire_refuses_a_copy_that_verify_finds_different(started: Migration) -> None:
    m = started
    assert m.topic_state() == "PROMOTED", "runs after the promote test"
    store = store_for(load_settings(m.config))
    runs = offset_runs.c
    mine = (runs.link == m.name) & (runs.topic == m.topic) & (runs.partition == 0)
    with store.transaction() as conn:
        first = conn.execute(select(offset_runs).where(mine).order_by(runs.source_start)).first()
        # Break the map: partition 0's records now "land" one offset later on the target.
        conn.execute(
            update(offset_runs)
            .where(runs.id == first.id)
            .values(target_start=first.target_start + 1)
        )
    try:
        result = m.cli("migrate", "retire", "--topics", m.topic, "--yes", timeout=300)
        refused(result, EXIT_CONFLICT, f"verify found {m.topic}[0] mismatch")
        assert m.topic_state() == "PROMOTED"
        with ClusterAdmin(m.clusters.source) as admin:
            assert admin.describe_topics_if_present([m.topic])
    finally:
        with store.transaction() as conn:
            conn.execute(
                update(offset_runs)
                .where(runs.id == first.id)
                .values(target_start=first.target_start)
            )


def test_retire_refuses_when_records_reached_the_source_after_promote(started: Migration) -> None:
    m = started
    fill(m.clusters.source, m.topic, 7, first=50_000)
    result = m.cli("migrate", "retire", "--topics", m.topic, "--yes")
    refused(result, EXIT_CONFLICT, "7 record(s) were written to")
    assert m.topic_state() == "PROMOTED"


def test_plan_check_lists_every_problem_and_start_changes_nothing(
    clusters: Clusters, tmp_path: Path
) -> None:
    m = new_migration(clusters, tmp_path, group=False)
    edit_plan(m.plan, {"topics": [{"name": m.topic, "partitions": 5}]})
    taken = unique("taken")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(taken, 2)
    with ClusterAdmin(clusters.target) as admin:
        admin.create_topic(taken, 2)
    fill(clusters.target, taken, 3)
    raw = yaml.safe_load(m.plan.read_text())
    raw["topics"].append({"name": taken, "partitions": 2})
    m.plan.write_text(yaml.safe_dump(raw))
    check = m.cli("plan", "check", str(m.plan), "--sample", "0.5")
    assert check.code == EXIT_CONFLICT, check.stderr
    assert f"topic {m.topic} has 3 partitions on source 'source', the plan says 5" in check.stdout
    assert f"topic {taken} exists on target 'target' with records no link wrote" in check.stdout
    start = m.cli("migrate", "start", str(m.plan))
    refused(start, EXIT_CONFLICT, "the plan has 2 problem(s), nothing started")
    assert "no migration yet" in m.ok("migrate", "status").stdout  # nothing yet: exit 0
    with ClusterAdmin(clusters.target) as admin:
        assert admin.describe_topics_if_present([m.topic]) == []


def test_a_broken_plan_file_is_one_line(clusters: Clusters, tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text("name: x\nsource: source\ntarget: target\ntopics: [{name: t}]\n")
    result = run_cli("plan", "check", str(path), config=str(clusters.config_path))
    refused(result, 2, "topics.0.partitions: field required")


def test_status_watch_refreshes_until_interrupted_and_history_shows_refusals(
    started: Migration,
) -> None:
    m = started
    out = m.folder / "watch.out"
    with open(out, "wb") as sink:
        # Started as a CI runner starts it: SIGINT inherited ignored (a pytest-xdist
        # worker ignores it); the watch handles Ctrl-C and SIGTERM itself.
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kmigrate",
                "--config",
                str(m.config),
                "migrate",
                "status",
                "--watch",
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={**os.environ, "COLUMNS": "200"},
        )
        try:
            # Two screens at least: the first and one refresh.
            wait_for(
                lambda: out.read_text().count(m.topic) >= 2,
                timeout=60,
                message="status --watch refreshed",
            )
        finally:
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=30)
    assert code == 130
    text = out.read_text()
    assert "next:" in text and m.group in text
    history = m.ok("migrate", "history").stdout
    assert "refused" in history and "promote" in history

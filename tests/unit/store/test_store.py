"""The metadata store on a real SQLite file: links, offset maps, gaps, runs."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import Any

import pytest

from kmigrate.errors import ConflictError, NotFoundError, StoreError
from kmigrate.model.links import Gap, Link, StartPosition, TopicState
from kmigrate.model.offsets import Exactness, OffsetRun, PartitionUpdate
from kmigrate.model.runs import RunState
from kmigrate.store import Store, open_store
from kmigrate.store.links import (
    link_topics_of,
    list_links,
    owner_of,
    put_topic,
    require_link,
    save_link,
    set_topic_state,
)
from kmigrate.store.offsets import (
    gaps_of,
    load_partitions,
    record_batch,
    record_gap,
    start_partition,
)
from kmigrate.store.runs import begin_run, get_run, report_run


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return open_store("sqlite:///state/kmigrate.db", tmp_path)


LINK = Link("a-to-b", "a", "b", "orders.*", StartPosition("earliest"))


def test_relative_sqlite_path_resolves_against_the_config_folder(tmp_path: Path) -> None:
    store = open_store("sqlite:///state/kmigrate.db", tmp_path)
    save_link(store, LINK)
    assert (tmp_path / "state" / "kmigrate.db").is_file()
    assert store.where == str(tmp_path / "state" / "kmigrate.db")


def test_bad_url_is_a_store_error_without_the_password() -> None:
    with pytest.raises(StoreError) as info:
        open_store("nosuchdb+driver://user:s3cret@host/db")
    assert "s3cret" not in str(info.value)


def test_a_link_keeps_its_clusters(store: Store) -> None:
    save_link(store, LINK)
    save_link(store, Link("a-to-b", "a", "b", "payments.*", StartPosition("latest")))
    assert require_link(store, "a-to-b").topics == "payments.*"
    with pytest.raises(ConflictError, match="already mirrors a -> b"):
        save_link(store, Link("a-to-b", "a", "c", "x"))
    with pytest.raises(NotFoundError, match="known links: a-to-b"):
        require_link(store, "nope")


def test_topics_and_their_owner(store: Store) -> None:
    save_link(store, LINK)
    put_topic(store, LINK.name, "orders", 3, TopicState.MIRRORING)
    put_topic(store, LINK.name, "orders", 4, TopicState.MIRRORING)
    set_topic_state(store, LINK.name, "orders", TopicState.PROMOTING)
    [topic] = link_topics_of(store, LINK.name)
    assert (topic.partitions, topic.state) == (4, TopicState.PROMOTING)
    assert owner_of(store, "b", "orders") == LINK.name
    assert owner_of(store, "a", "orders") is None


def test_batches_extend_the_map_and_merge_continuing_runs(store: Store) -> None:
    save_link(store, LINK)
    start_partition(store, LINK.name, "orders", 0, source_start=10, target_start=5)
    start_partition(store, LINK.name, "orders", 0, source_start=99, target_start=99)  # no-op
    record_batch(store, LINK.name, [PartitionUpdate("orders", 0, (OffsetRun(10, 5, 3),), 13, 111)])
    record_batch(
        store,
        LINK.name,
        [PartitionUpdate("orders", 0, (OffsetRun(13, 8, 2), OffsetRun(20, 10, 1)), 22, 222)],
    )
    [state] = load_partitions(store, LINK.name)
    assert state.map.runs == (OffsetRun(10, 5, 5), OffsetRun(20, 10, 1))
    assert (state.map.source_next, state.target_start, state.mirrored) == (22, 5, 6)
    assert state.last_timestamp == 222
    assert state.map.translate(16).target_offset == 10  # in the gap: next record's target
    assert state.map.translate(9).exactness is Exactness.BELOW_MAP_START


def test_one_batch_over_many_partitions_and_two_links_keeps_each_map_apart(
    store: Store,
) -> None:
    """A batch writes many partitions' runs at once; another link mirroring topics of
    the same names keeps its own map, and a partition without a new timestamp keeps
    its last one."""
    other = Link("c-to-d", "c", "d", "orders.*", StartPosition("earliest"))
    save_link(store, LINK)
    save_link(store, other)
    keys = [(t, p) for t in ("orders", "orders.eu") for p in range(3)]
    for link in (LINK.name, other.name):
        for t, p in keys:
            start_partition(store, link, t, p, source_start=0, target_start=100)
    first = [PartitionUpdate(t, p, (OffsetRun(0, 100, p + 1),), p + 1, 7) for t, p in keys]
    record_batch(store, LINK.name, first)
    record_batch(store, other.name, [PartitionUpdate("orders", 1, (OffsetRun(0, 100, 9),), 9, 8)])
    record_batch(
        store,
        LINK.name,
        [PartitionUpdate(t, p, (OffsetRun(p + 1, 101 + p, 2),), p + 3, None) for t, p in keys],
    )
    mine = {(s.topic, s.partition): s for s in load_partitions(store, LINK.name)}
    for t, p in keys:
        assert mine[(t, p)].map.runs == (OffsetRun(0, 100, p + 3),), (t, p)
        assert (mine[(t, p)].map.source_next, mine[(t, p)].mirrored) == (p + 3, p + 3)
        assert mine[(t, p)].last_timestamp == 7
    theirs = {(s.topic, s.partition): s for s in load_partitions(store, other.name)}
    assert theirs[("orders", 1)].map.runs == (OffsetRun(0, 100, 9),)
    assert theirs[("orders", 0)].map.runs == ()


def test_a_gap_is_recorded_once_and_only_widens(store: Store) -> None:
    record_gap(store, "l", Gap("t", 0, 100, 150, "deleted by retention before mirrored"))
    record_gap(store, "l", Gap("t", 0, 100, 140, "deleted by retention before mirrored"))
    record_gap(store, "l", Gap("t", 0, 100, 170, "deleted by retention before mirrored"))
    assert [(g.source_start, g.source_end) for g in gaps_of(store, "l")] == [(100, 170)]


def test_only_the_owning_process_updates_a_run(store: Store) -> None:
    begin_run(store, "l", 111, "host", "/log")
    report_run(store, "l", 222, RunState.FAILED, reason="not mine")
    report_run(store, "l", 111, RunState.RUNNING, records_per_s=5.0)
    run = get_run(store, "l")
    assert run is not None
    assert (run.pid, run.state, run.records_per_s, run.reason) == (111, RunState.RUNNING, 5.0, None)


def test_a_store_made_before_a_column_was_added_gets_it(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:  # mirror_runs as the first release made it
        conn.execute(
            "CREATE TABLE mirror_runs (link VARCHAR(100) PRIMARY KEY, pid INTEGER NOT NULL, "
            "host VARCHAR(255) NOT NULL, state VARCHAR(20) NOT NULL, reason TEXT, "
            "started_ms BIGINT NOT NULL, heartbeat_ms BIGINT NOT NULL, "
            "records_per_s FLOAT NOT NULL, log_path TEXT)"
        )
        conn.execute(
            "INSERT INTO mirror_runs VALUES ('l', 1, 'h', 'running', NULL, 1, 2, 3.0, NULL)"
        )
    store = open_store(f"sqlite:///{db}")
    run = get_run(store, "l")
    assert run is not None and run.batch_s is None and run.records_per_s == 3.0
    report_run(store, "l", 1, RunState.RUNNING, batch_s=0.25)
    assert get_run(store, "l").batch_s == 0.25  # type: ignore[union-attr]


def test_reading_a_store_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    store = open_store("sqlite:///state/kmigrate.db", tmp_path)
    assert list_links(store) == [] and get_run(store, "l") is None
    assert load_partitions(store, "l") == [] and gaps_of(store, "l") == []
    with pytest.raises(NotFoundError, match="known links: none"):
        require_link(store, "nope")
    assert list(tmp_path.iterdir()) == []  # no folder, no file, no -wal/-shm


def test_the_first_write_creates_the_store_and_leaves_no_journal(tmp_path: Path) -> None:
    store = open_store("sqlite:///state/kmigrate.db", tmp_path)
    save_link(store, LINK)
    assert sorted(p.name for p in (tmp_path / "state").iterdir()) == ["kmigrate.db"]
    again = open_store("sqlite:///state/kmigrate.db", tmp_path)
    assert require_link(again, LINK.name) == LINK


def test_reading_an_existing_store_changes_no_byte(tmp_path: Path) -> None:
    save_link(open_store("sqlite:///kmigrate.db", tmp_path), LINK)
    before = (tmp_path / "kmigrate.db").read_bytes()
    store = open_store("sqlite:///kmigrate.db", tmp_path)
    assert [link.name for link in list_links(store)] == [LINK.name]
    assert owner_of(store, "b", "orders") is None
    assert (tmp_path / "kmigrate.db").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kmigrate.db"]


def test_a_reader_cannot_write(tmp_path: Path) -> None:
    store = open_store("sqlite:///kmigrate.db", tmp_path)
    save_link(store, LINK)
    with pytest.raises(StoreError, match="readonly"), store.reading() as conn:
        conn.exec_driver_sql("DELETE FROM links")
    assert require_link(store, LINK.name) == LINK


def test_a_store_deleted_under_a_reader_reads_as_empty_then_is_made_again(
    tmp_path: Path,
) -> None:
    store = open_store("sqlite:///kmigrate.db", tmp_path)
    save_link(store, LINK)
    (tmp_path / "kmigrate.db").unlink()
    assert list_links(store) == []
    save_link(store, LINK)
    assert require_link(store, LINK.name) == LINK


def test_an_in_memory_store_keeps_its_data_between_units_of_work() -> None:
    store = open_store("sqlite://")
    save_link(store, LINK)
    assert require_link(store, LINK.name) == LINK


def test_a_store_whose_schema_is_not_committed_yet_reads_as_empty(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "kmigrate.db"
    with sqlite3.connect(db) as conn:  # a writer that has only just opened the file
        conn.execute("PRAGMA journal_mode=WAL")
    before = db.read_bytes()
    store = open_store(f"sqlite:///{db}")
    assert list_links(store) == [] and get_run(store, "l") is None
    assert db.read_bytes() == before
    save_link(store, LINK)
    assert require_link(store, LINK.name) == LINK


def _first_write(path: str, ready: Any, go: Any, results: Any) -> None:
    from kmigrate.store import open_store as opened

    ready.wait()
    go.wait()
    try:
        store = opened(f"sqlite:///{path}")
        save_link(store, Link(f"l{os.getpid()}", "a", "b", ".*", StartPosition("earliest")))
        results.put("ok")
    except Exception as exc:  # the failure is what the test reports
        results.put(f"{type(exc).__name__}: {exc}")


def test_processes_writing_a_new_store_at_once_all_succeed(tmp_path: Path) -> None:
    """A test and the mirror it starts (or two commands) may both make the store: each
    first write succeeds, and every link is there."""
    context = multiprocessing.get_context("spawn")
    count = 6
    ready, go, results = context.Barrier(count + 1), context.Event(), context.Queue()
    path = str(tmp_path / "new" / "kmigrate.db")
    workers = [
        context.Process(target=_first_write, args=(path, ready, go, results)) for _ in range(count)
    ]
    for worker in workers:
        worker.start()
    ready.wait()
    go.set()
    outcomes = [results.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(30)
    assert outcomes == ["ok"] * count, outcomes
    assert len(list_links(open_store(f"sqlite:///{path}"))) == count

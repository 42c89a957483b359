"""Group positions in the store, for many groups at once: one transaction and a constant
number of statements per call, whatever the number of groups, with the same rows as one
group at a time."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, event

from kmigrate.store import Store, open_store
from kmigrate.store.groups import (
    positions_by_group,
    positions_of,
    remember_source,
    remember_sources,
    remember_target,
    remember_targets,
)

LINK = "a-to-b"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return open_store("sqlite:///kmigrate.db", tmp_path)


class _Statements:
    def __init__(self) -> None:
        self.statements = 0
        self.transactions = 0


@pytest.fixture
def counted() -> Iterator[_Statements]:
    """Statements and transactions this test's thread sends to any database while it
    runs (not those of a thread another test in this worker process left running)."""
    seen = _Statements()
    mine = threading.get_ident()

    def statement(*_: Any) -> None:
        if threading.get_ident() == mine:
            seen.statements += 1

    def transaction(*_: Any) -> None:
        if threading.get_ident() == mine:
            seen.transactions += 1

    event.listen(Engine, "before_cursor_execute", statement)
    event.listen(Engine, "begin", transaction)
    yield seen
    event.remove(Engine, "before_cursor_execute", statement)
    event.remove(Engine, "begin", transaction)


def _commits(groups: int, shift: int = 0) -> dict[str, list[tuple[str, int, int, int]]]:
    return {
        f"g{i:04d}": [("orders", p, i + p + shift, 10 * (i + p + shift)) for p in range(3)]
        for i in range(groups)
    }


def test_many_groups_are_written_in_one_transaction_of_few_statements(
    store: Store, counted: _Statements
) -> None:
    remember_sources(store, LINK, {"warm": [("orders", 0, 1)]})  # the schema is made once
    for groups in (10, 1200):  # more groups than one IN (...) takes
        before = (counted.transactions, counted.statements)
        remember_targets(store, LINK, _commits(groups))
        assert counted.transactions - before[0] == 1
        # a few statements per 500 groups (reading the keys), never one per group
        assert counted.statements - before[1] <= 4 + groups // 500
    found = positions_by_group(store, LINK)
    assert len(found) == 1201
    assert [(p.partition, p.source_offset, p.target_offset) for p in found["g1100"]] == [
        (0, 1100, 11000),
        (1, 1101, 11010),
        (2, 1102, 11020),
    ]


def test_bulk_and_one_group_at_a_time_leave_the_same_rows(tmp_path: Path) -> None:
    one, many = (open_store(f"sqlite:///{name}.db", tmp_path) for name in ("one", "many"))
    first, later = _commits(10), _commits(10, shift=5)
    for group, commits in first.items():
        remember_source(one, LINK, group, [c[:3] for c in commits])
        remember_target(one, LINK, group, commits[:2])
    remember_sources(many, LINK, {g: [c[:3] for c in cs] for g, cs in first.items()})
    remember_targets(many, LINK, {g: cs[:2] for g, cs in first.items()})
    # A later source commit moves the source offset and keeps kmigrate's target commit.
    for group, commits in later.items():
        remember_source(one, LINK, group, [c[:3] for c in commits])
    remember_sources(many, LINK, {g: [c[:3] for c in cs] for g, cs in later.items()})

    def rows(store: Store) -> dict[str, list[tuple[Any, ...]]]:
        return {
            g: [(p.topic, p.partition, p.source_offset, p.target_offset) for p in ps]
            for g, ps in positions_by_group(store, LINK).items()
        }

    assert rows(one) == rows(many)
    assert rows(many)["g0007"] == [
        ("orders", 0, 12, 70),
        ("orders", 1, 13, 80),
        ("orders", 2, 14, None),
    ]


def test_a_commit_is_never_stamped_before_the_source_it_moved(store: Store) -> None:
    remember_targets(store, LINK, _commits(5))
    for positions in positions_by_group(store, LINK).values():
        for p in positions:
            assert p.committed_ms is not None and p.committed_ms >= p.seen_ms


def test_reading_some_groups_leaves_out_the_others_and_the_unknown(store: Store) -> None:
    remember_sources(store, LINK, {"a": [("t", 0, 1)], "b": [("t", 0, 2)]})
    remember_sources(store, "other-link", {"a": [("t", 0, 9)]})
    found = positions_by_group(store, LINK, ["a", "nobody"])
    assert list(found) == ["a"] and found["a"][0].source_offset == 1
    assert positions_of(store, LINK, "nobody") == []

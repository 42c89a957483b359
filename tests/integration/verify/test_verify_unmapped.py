"""Target records past the offset map are classified by content and state, never passed
unseen: an unrecorded mirror batch (equal to the source's next records) is a match with
a note, records written after promote are the new owners' (a note with their count),
anything else is an extra record on the target (mismatch, exit 1, at its offset)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.helpers import run_cli, unique
from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce
from kmigrate.model.links import Link, TopicState
from kmigrate.model.offsets import OffsetRun, PartitionUpdate
from kmigrate.model.records import Record
from kmigrate.store import store_for
from kmigrate.store.links import put_topic, save_link
from kmigrate.store.offsets import record_batch, start_partition
from tests.integration.conftest import Clusters
from tests.integration.mirror.harness import mirror_config
from tests.integration.verify.conftest import N, source_records

MORE = 30  # source records past the map (the mirror's next batch)
CASES = ("interrupted", "promoted", "foreign", "foreign-later")


def _target(case: str, records: list[Record]) -> list[Record]:
    """What the target holds: the N mapped records, then the case's unmapped ones."""
    mapped = records[:N]
    if case == "interrupted":  # a batch written, not recorded: the next 12 source records
        return mapped + records[N : N + 12]
    if case == "promoted":  # the new owners' producers after promote
        return mapped + [Record(b"new", b"owner-%d" % i, (), None, 0) for i in range(7)]
    if case == "foreign":  # someone else wrote while the mirror was stopped
        return [*mapped, Record(b"intruder", b"not from the source", (), None, 0)]
    # the first 5 are the mirror's next records, the 6th is not
    return [*mapped, *records[N : N + 5], Record(b"intruder", b"late", (), None, 0)]


@pytest.fixture(scope="module")
def verified(clusters: Clusters, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("unmapped")
    config = mirror_config(clusters.config_path, folder)
    prefix = unique("unm")
    topics = {case: f"{prefix}-{case}" for case in CASES}
    store = store_for(load_settings(config))
    save_link(store, Link("unmapped", "source", "target", f"{prefix}-.*"))
    with ClusterAdmin(clusters.source) as src, ClusterAdmin(clusters.target) as tgt:
        for case, topic in topics.items():
            src.create_topic(topic, 1)
            tgt.create_topic(topic, 1)
            records = source_records(topic, N + MORE)
            produce(clusters.source, topic, records)
            produce(clusters.target, topic, _target(case, records))
            state = TopicState.PROMOTED if case == "promoted" else TopicState.MIRRORING
            put_topic(store, "unmapped", topic, 1, state)
            start_partition(store, "unmapped", topic, 0, 0, 0)
            update = PartitionUpdate(topic, 0, (OffsetRun(0, 0, N),), N, None)
            record_batch(store, "unmapped", [update])
    done = run_cli("verify", "--link", "unmapped", "--json", config=str(config), timeout=280)
    report = json.loads(done.stdout)
    by_topic = {p["topic"]: p for p in report["partitions"]}
    return {"code": done.code, "report": report, "case": {c: by_topic[topics[c]] for c in CASES}}


def _notes(found: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {n["kind"]: (n["start"], n["end"]) for n in found["not_compared"]}


def test_an_unmapped_target_record_fails_verify(verified: dict[str, Any]) -> None:
    assert verified["code"] == 1, "a foreign record past the map must fail verify"
    assert verified["report"]["ok"] is False
    assert verified["report"]["summary"]["mismatched"] == 2


def test_an_interrupted_batch_is_a_match_with_a_note(verified: dict[str, Any]) -> None:
    found = verified["case"]["interrupted"]
    assert found["status"] == "match", found["message"]
    assert _notes(found)["in-flight-batch"] == (N, N + 12)
    assert found["difference"] is None


def test_records_after_promote_are_noted_with_their_count(verified: dict[str, Any]) -> None:
    found = verified["case"]["promoted"]
    assert found["status"] == "match", found["message"]
    assert _notes(found)["after-promote"] == (N, N + 7)


@pytest.mark.parametrize(("case", "at"), [("foreign", N), ("foreign-later", N + 5)])
def test_a_foreign_record_is_located_at_its_target_offset(
    verified: dict[str, Any], case: str, at: int
) -> None:
    found = verified["case"][case]
    assert found["status"] == "mismatch", found["message"]
    d = found["difference"]
    assert d["kind"] == "extra-on-target"
    assert d["target_offset"] == at
    assert d["target_record"]["key"] == "intruder"
    assert f"offset {at}" in found["message"]

"""`mirror status` for a link of 100 topics x 4 partitions, a few of them lagging and one
with a gap, against the session's real clusters (the link is written into the store
directly; no mirror runs): the human output is one row per topic, those that need
attention first, cut at --limit with one line for the rest, and the totals;
--partitions, --topics and --json (every partition, plus the summary) as the README
says; and the status costs one ListOffsets per cluster and the same store statements
whatever the partition count. Bad --topics / --limit are refused before any cluster is
asked (the contract's clusters answer nothing)."""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from sqlalchemy import event
from sqlalchemy.engine import Engine

from harness.helpers import unique, wait_for
from kmigrate.config import ClusterConfig, load_settings
from kmigrate.errors import ClusterUnavailableError, NotFoundError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.admin.offsets import Offsets
from kmigrate.kafka.records import produce
from kmigrate.model.links import Gap, Link
from kmigrate.model.offsets import OffsetRun, PartitionUpdate
from kmigrate.model.records import Record
from kmigrate.store import store_for
from kmigrate.store.links import save_link
from kmigrate.store.offsets import record_batch, record_gap
from tests.estate import add_topics
from tests.integration.cli_contract.harness import Ran, case, run_cases, run_in
from tests.integration.conftest import Clusters
from tests.integration.mirror.harness import mirror_config

TOPICS, PARTITIONS = 100, 4
# source records per lagging partition (topic index, partition) -> records; the store
# says t007[1] mirrored its first 10, every other partition nothing
WRITTEN = {(7, 1): 30, (23, 0): 5, (23, 1): 5, (50, 3): 12}
GAPPED = (42, 2)


@dataclass(frozen=True)
class Estate:
    folder: Path
    config: Path
    prefix: str

    def topic(self, i: int) -> str:
        return f"{self.prefix}-{i:03d}"

    def status(self, *args: str) -> Ran:
        ran = run_in(self.folder, ("--config", str(self.config), "mirror", "status", *args))
        assert ran.code == 0, ran.stderr
        return ran

    def rows(self, ran: Ran) -> list[str]:
        """The first cell of each table row that names one of the estate's topics."""
        return re.findall(rf"^│ ({re.escape(self.prefix)}-\d+) ", ran.stdout, re.MULTILINE)


def _create(clusters: list[ClusterConfig], names: list[str]) -> None:
    """One CreateTopics per cluster for all of them (the admin layer creates one at a
    time), both clusters at once; then wait until every partition's leader answers
    ListOffsets (a one-broker cluster takes seconds to elect 400 leaders, tens of
    seconds on a busy machine)."""
    admins = [AdminClient(c.as_librdkafka()) for c in clusters]  # kept: futures die with them
    futures = [
        future
        for admin in admins
        for future in admin.create_topics(
            [NewTopic(name, PARTITIONS, 1) for name in names], operation_timeout=60
        ).values()
    ]
    for future in futures:
        future.result(timeout=120)
    pairs = [(name, p) for name in names for p in range(PARTITIONS)]
    for cluster in clusters:
        wait_for(
            functools.partial(_answers, cluster, pairs),
            timeout=120,
            message=f"every new partition on {cluster.name} answers ListOffsets",
        )


def _answers(cluster: ClusterConfig, pairs: list[tuple[str, int]]) -> bool:
    with ClusterAdmin(cluster) as admin:
        try:
            return len(admin.partition_offsets(pairs, "latest")) == len(pairs)
        except (ClusterUnavailableError, NotFoundError):
            return False


def _delete(cluster: ClusterConfig, names: list[str]) -> None:
    """One DeleteTopics, not waiting for the broker to finish removing the logs."""
    admin = AdminClient(cluster.as_librdkafka())
    for future in admin.delete_topics(names, operation_timeout=0).values():
        future.result(timeout=60)


@pytest.fixture(scope="module")
def estate(clusters: Clusters, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Estate]:
    folder = tmp_path_factory.mktemp("status-scale")
    found = Estate(folder, mirror_config(clusters.config_path, folder), unique("st"))
    names = [found.topic(i) for i in range(TOPICS)]
    tiny = unique("st-tiny")
    _create([clusters.source, clusters.target], [*names, tiny])
    for (i, partition), count in WRITTEN.items():
        records = [Record(None, b"v", (), None, partition, None) for _ in range(count)]
        produce(clusters.source, found.topic(i), records)
    store = store_for(load_settings(found.config))
    save_link(store, Link("scale", "source", "target", f"{found.prefix}-.*"))
    add_topics(store, "scale", dict.fromkeys(names, PARTITIONS))
    five_s_ago = int(time.time() * 1000) - 5000
    update = PartitionUpdate(found.topic(7), 1, (OffsetRun(0, 0, 10),), 10, five_s_ago)
    record_batch(store, "scale", [update])
    record_gap(store, "scale", Gap(found.topic(GAPPED[0]), GAPPED[1], 3, 7, "retention"))
    save_link(store, Link("tiny", "source", "target", tiny))
    add_topics(store, "tiny", {tiny: PARTITIONS})
    yield found
    for cluster in (clusters.source, clusters.target):
        _delete(cluster, [*names, tiny])


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one table row per line
    monkeypatch.delenv("KMIGRATE_CONFIG", raising=False)


def test_one_row_per_topic_attention_first_then_one_line_and_the_totals(estate: Estate) -> None:
    ran = estate.status("--link", "scale")
    rows = estate.rows(ran)
    assert len(rows) == 20  # --limit's default
    # the gap, then by lag: t007 20, t050 12, t023 5 + 5; then caught up, by name
    t = estate.topic
    assert rows[:5] == [t(42), t(7), t(50), t(23), t(0)], ran.stdout
    # records/s may be written 1,250
    t7 = rf"│ {t(7)}\s+│ mirroring\s+│ 4\s+│ 20\s+│ 1\s+│ \d+\.\d\s+│ [\d,]+\s+│"
    assert re.search(t7, ran.stdout), ran.stdout
    assert "... and 80 more topic(s): all caught up" in ran.stdout
    assert "topics 100, partitions 400, lagging partitions 4, total lag 42" in ran.stdout
    assert f"gap {t(42)}[2] source offsets 3..6: retention" in ran.stdout
    assert ran.stdout.startswith("link scale: source -> target")

    everything = estate.status("--link", "scale", "--limit", "0")
    assert len(estate.rows(everything)) == TOPICS and "more topic(s)" not in everything.stdout

    few = estate.status("--link", "scale", "--limit", "2")
    assert estate.rows(few) == [t(42), t(7)]
    assert "... and 98 more topic(s): total lag 22" in few.stdout


def test_partitions_rows_attention_first(estate: Estate) -> None:
    ran = estate.status("--link", "scale", "--partitions", "--limit", "5")
    t = estate.topic
    rows = re.findall(rf"^│ ({re.escape(estate.prefix)}-\d+)\s+│ (\d+)\s", ran.stdout, re.M)
    assert rows == [(t(42), "2"), (t(7), "1"), (t(50), "3"), (t(23), "0"), (t(23), "1")]
    assert re.search(rf"│ {t(7)}\s+│ 1\s+│ mirroring\s+│ 30\s+│ 10\s+│ 0\s+│ 20\s+│", ran.stdout)
    assert "... and 395 more partition(s): all caught up" in ran.stdout
    assert "topics 100, partitions 400, lagging partitions 4, total lag 42" in ran.stdout


def test_topics_keeps_only_the_matching_ones(estate: Estate) -> None:
    ran = estate.status("--link", "scale", "--topics", f"{estate.prefix}-0[1-3][0-9]")
    rows = estate.rows(ran)
    assert len(rows) == 20 and rows[0] == estate.topic(23)
    assert all(10 <= int(r.rsplit("-", 1)[1]) <= 39 for r in rows)
    assert "... and 10 more topic(s): all caught up" in ran.stdout
    assert "topics 30, partitions 120, lagging partitions 2, total lag 10" in ran.stdout
    assert "gap" not in ran.stdout  # t042's gap is not one of these topics


def _links(ran: Ran) -> dict[str, Any]:
    return {link["link"]: link for link in json.loads(ran.stdout)["links"]}


def test_json_has_every_partition_and_adds_the_summary(estate: Estate) -> None:
    scale = _links(estate.status("--json", "--limit", "1"))["scale"]  # --limit: people only
    t = estate.topic
    assert len(scale["partitions"]) == TOPICS * PARTITIONS and len(scale["topics"]) == TOPICS
    by_partition = {(p["topic"], p["partition"]): p for p in scale["partitions"]}
    lagging = by_partition[(t(7), 1)]
    assert [lagging[k] for k in ("source_end", "mirrored_to", "target_end", "lag", "mirrored")] == [
        30, 10, 0, 20, 10
    ]  # fmt: skip
    assert lagging["lag_s"] > 4.5  # its newest mirrored record is 5 s old
    assert scale["lag"] == 42 and len(scale["gaps"]) == 1
    summary = scale["summary"]
    assert {k: summary[k] for k in ("topics", "partitions", "lagging_partitions", "lag")} == {
        "topics": TOPICS, "partitions": TOPICS * PARTITIONS, "lagging_partitions": 4, "lag": 42,
    }  # fmt: skip
    assert len(summary["by_topic"]) == TOPICS
    assert [s["topic"] for s in summary["by_topic"][:4]] == [t(42), t(7), t(50), t(23)]
    t7 = summary["by_topic"][1]
    assert (t7["partitions"], t7["lag"], t7["lagging_partitions"], t7["gaps"]) == (4, 20, 1, 0)
    assert t7["lag_s"] == lagging["lag_s"] and summary["by_topic"][0]["gaps"] == 1

    only = _links(estate.status("--json", "--link", "scale", "--topics", re.escape(t(50))))
    assert [(p["topic"], p["lag"]) for p in only["scale"]["partitions"]] == [
        (t(50), 0), (t(50), 0), (t(50), 0), (t(50), 12),
    ]  # fmt: skip
    assert only["scale"]["summary"]["topics"] == 1 and only["scale"]["lag"] == 12


def test_status_costs_the_same_round_trips_for_400_partitions_as_for_4(
    estate: Estate, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[int] = []
    statements: list[str] = []
    real = Offsets.partition_offsets

    def counted(self: Offsets, partitions: Any, *args: Any, **kwargs: Any) -> Any:
        partitions = list(partitions)
        asked.append(len(partitions))
        return real(self, partitions, *args, **kwargs)

    def note(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    monkeypatch.setattr(Offsets, "partition_offsets", counted)  # one ListOffsets request
    event.listen(Engine, "before_cursor_execute", note)
    try:
        costs = {}
        for link in ("scale", "tiny"):
            asked.clear()
            statements.clear()
            estate.status("--json", "--link", link)
            costs[link] = (list(asked), len(statements))
            maps = [s for s in statements if s.startswith("SELECT") and "offset_runs" in s]
            assert maps == []  # status never reads the offset maps
    finally:
        event.remove(Engine, "before_cursor_execute", note)
    everything = TOPICS * PARTITIONS
    assert costs["scale"] == ([everything, everything], costs["tiny"][1])
    assert costs["tiny"][0] == [PARTITIONS, PARTITIONS]


# Refused before any cluster is asked: the contract's clusters answer nothing, so a
# command that asked first would exit 3, not 2.
test_bad_input_is_refused_first = run_cases(
    [
        case("mirror", "status", "--topics", "(", exit=2, says="is not a regex"),
        case("mirror", "status", "--limit", "-1", exit=2, says="-1 is not in the range"),
        case("mirror", "status", "--limit", "some", exit=2, says="'some' is not a valid integer"),
        case("mirror", "status", "--topics", "(", "--json", exit=2, says="is not a regex"),
    ]
)

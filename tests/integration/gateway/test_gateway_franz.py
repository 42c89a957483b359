"""franz-go (Go) through the gateway: its idempotent producer pipelines up to 5 requests
per connection, as Java's does, and its group consumer reads everything back once, in
the order it was sent."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from harness.ecosystems import franz
from harness.gateway import Gateway
from harness.helpers import run_cli, unique, wait_for
from kmigrate.kafka.admin import ClusterAdmin
from tests.integration.conftest import Clusters

RECORDS = 2000
PARTITIONS = 6


def test_franz_go_produces_and_consumes_through_the_gateway(
    clusters: Clusters, gateway: Gateway, tmp_path: Path
) -> None:
    topic, group = unique("gw-franz"), unique("gw-franz-group")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, PARTITIONS)
    routed = run_cli("gateway", "route", "set", "--topic", topic, "--cluster", "source",
                     config=str(gateway.config))  # fmt: skip
    assert routed.code == 0, routed.stderr

    sent = tmp_path / "produce.jsonl"
    producer = franz.start("produce", sent, "--bootstrap", gateway.bootstrap, "--topic", topic,
                           "--keys", "60", "--max", str(RECORDS))  # fmt: skip
    try:
        code = producer.wait(120)
    finally:
        franz.stop(producer)
    assert code == 0, sent.with_suffix(".err").read_text()[-2000:]
    acked = franz.events(sent, "producer_send_success")
    assert not franz.events(sent, "producer_send_error"), sent.read_text()[-2000:]
    assert len(acked) == RECORDS
    assert len(franz.events(sent, "producer_epoch")) == 1, "one producer id, no epoch bump"
    assert franz.events(sent)[-1]["name"] == "shutdown_complete"

    read = tmp_path / "consume.jsonl"
    consumer = franz.start("consume", read, "--bootstrap", gateway.bootstrap, "--topic", topic,
                           "--group", group)  # fmt: skip
    try:
        wait_for(lambda: len(franz.events(read, "record")) >= RECORDS, timeout=90,
                 message=f"{RECORDS} records read back with franz-go")  # fmt: skip
    finally:
        code = franz.stop(consumer)
    assert code == 0, read.with_suffix(".err").read_text()[-2000:]
    records = franz.events(read, "record")
    committed_all = {"name": "offsets_committed", "success": True}
    assert franz.events(read, "offsets_committed") == [committed_all]

    position = {(r["partition"], r["offset"]): (r["key"], r["value"]) for r in acked}
    seen = Counter((r["partition"], r["offset"], r["key"], r["value"]) for r in records)
    assert seen == Counter((*at, *kv) for at, kv in position.items()), "each acked record once"
    sent_order: dict[int, list[int]] = defaultdict(list)  # the producer sent 0, 1, 2, ...
    for r in acked:
        sent_order[r["partition"]].append(int(r["value"]))
    by_offset = sorted(records, key=lambda r: (r["partition"], r["offset"]))
    for partition, values in sent_order.items():
        stored = [int(r["value"]) for r in by_offset if r["partition"] == partition]
        assert stored == sorted(values), f"partition {partition} holds records in send order"
    with ClusterAdmin(clusters.target) as admin:  # the group home holds the commits
        committed = {c.partition: c.committed for c in admin.committed_offsets(group)}
    assert sum(committed.values()) == RECORDS

"""The DIS stream HTTP API on two gateway instances, across a partition migration:
records put through one instance, read through the other with a cursor taken before
the partition moved; the sequence numbers are the offsets Kafka clients see."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from harness.gateway import Gateway
from harness.gateway_traffic import routed_topic
from harness.helpers import run_cli, unique, wait_for
from kmigrate.kafka.admin import ClusterAdmin
from tests.integration.conftest import Clusters


def _call(url: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url,
        data=data,
        headers={"Content-Type": "application/json"},
        method="POST" if data else "GET",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _put(gw: Gateway, node: int, stream: str, values: list[str]) -> list[int]:
    status, body = _call(
        f"{gw.http(node)}/records",
        {"stream_name": stream, "records": [
            {"data": base64.b64encode(v.encode()).decode(), "partition_id": "shardId-0000000000"}
            for v in values
        ]},
    )  # fmt: skip
    assert status == 200 and body["failed_record_count"] == 0, body
    return [int(r["sequence_number"]) for r in body["records"]]


def _cursor(gw: Gateway, node: int, stream: str, kind: str, extra: str = "") -> str:
    status, body = _call(
        f"{gw.http(node)}/cursors?stream-name={stream}&partition-id=0&cursor-type={kind}{extra}"
    )
    assert status == 200, body
    return str(body["partition_cursor"])


def _read(gw: Gateway, node: int, cursor: str, limit: int) -> list[tuple[int, str]]:
    """The first ``limit`` records from ``cursor``, following next_partition_cursor."""
    found: list[tuple[int, str]] = []

    def more() -> bool:
        nonlocal cursor
        status, body = _call(
            f"{gw.http(node)}/records?partition-cursor={cursor}&max_fetch_bytes=400"
        )
        assert status == 200, body
        found.extend((int(r["sequence_number"]), base64.b64decode(r["data"]).decode())
                     for r in body["records"])  # fmt: skip
        cursor = body["next_partition_cursor"]
        return len(found) >= limit

    wait_for(more, timeout=30, message=f"{limit} records through the DIS API")
    return found[:limit]


def test_records_and_cursors_across_a_partition_migration(
    clusters: Clusters, gateway: Gateway
) -> None:
    stream = routed_topic(gateway, clusters.source, "dis", 2)
    assert _put(gateway, 1, stream, [f"a{i}" for i in range(30)]) == list(range(30))
    early = _read(gateway, 2, _cursor(gateway, 2, stream, "TRIM_HORIZON"), 10)
    assert early == [(i, f"a{i}") for i in range(10)]
    cursor = _cursor(gateway, 2, stream, "AFTER_SEQUENCE_NUMBER", "&starting-sequence-number=9")

    done = run_cli("gateway", "migrate", "--topic", stream, "--partitions", "0",
                   "--cluster", "target", config=str(gateway.config))  # fmt: skip
    assert done.code == 0, done.stderr
    assert _put(gateway, 2, stream, [f"b{i}" for i in range(20)]) == list(range(30, 50))
    with ClusterAdmin(clusters.target) as admin:
        assert admin.watermarks(stream)[0].high == 20  # written on the target

    # the cursor taken before the move reads on, through the other instance
    rest = _read(gateway, 1, cursor, 40)
    expected = [(i, f"a{i}") for i in range(10, 30)] + [(30 + i, f"b{i}") for i in range(20)]
    assert rest == expected
    at = _read(gateway, 1, _cursor(gateway, 1, stream, "AT_SEQUENCE_NUMBER",
                                      "&starting-sequence-number=35"), 1)  # fmt: skip
    assert at == [(35, "b5")]
    first = _read(gateway, 2, _cursor(gateway, 2, stream, "AT_TIMESTAMP", "&timestamp=0"), 1)
    assert first == [(0, "a0")]  # the oldest record, on the origin
    for kind, extra in (("AT_TIMESTAMP", "&timestamp=99999999999999"), ("LATEST", "")):
        at_end = _cursor(gateway, 2, stream, kind, extra)  # after the newest record
        status, body = _call(f"{gateway.http(2)}/records?partition-cursor={at_end}")
        assert status == 200 and body["records"] == [], (kind, body)

    # Kafka clients see the same offsets
    consumer = Consumer({"bootstrap.servers": gateway.bootstrap, "group.id": unique("dis")})
    consumer.assign([TopicPartition(stream, 0, 0)])
    seen: dict[int, str] = {}

    def read() -> bool:
        for m in consumer.consume(100, 0.5):
            if m.error() is None:
                seen[m.offset()] = m.value().decode()
        return len(seen) >= 50

    try:
        wait_for(read, timeout=30, message="a Kafka consumer read the stream")
    finally:
        consumer.close()
    assert sorted(seen.items()) == early + expected


def test_bad_requests_are_one_line_and_change_nothing(clusters: Clusters, gateway: Gateway) -> None:
    stream = routed_topic(gateway, clusters.source, "dis-bad", 1)
    cases = [
        (f"{gateway.http(1)}/cursors?stream-name=nowhere&partition-id=0", 404),
        (f"{gateway.http(1)}/cursors?stream-name={stream}&partition-id=shard-1", 400),
        (f"{gateway.http(1)}/cursors?stream-name={stream}&partition-id=0&cursor-type=SOON", 400),
        (f"{gateway.http(1)}/cursors?stream-name={stream}&partition-id=0"
         "&cursor-type=AT_SEQUENCE_NUMBER&starting-sequence-number=99", 400),
        (f"{gateway.http(1)}/records?partition-cursor=forged.cursor", 400),
    ]  # fmt: skip
    for url, expected in cases:
        status, body = _call(url)
        assert status == expected, (url, body)
        assert body["error_msg"] and "\n" not in body["error_msg"]
    status, body = _call(f"{gateway.http(1)}/records",
                         {"stream_name": stream, "records": [{"data": "%%%"}]})  # fmt: skip
    assert status == 400 and "not base64" in body["error_msg"]
    status, body = _call(f"{gateway.http(1)}/records", {"stream_name": stream})
    assert (status, body["error_code"]) == (400, "DIS.4200"), body
    assert body["error_msg"].startswith("records:"), body
    status, body = _call(f"{gateway.http(1)}/cursors?stream-name={stream}")
    assert status == 400 and body["error_msg"].startswith("partition-id:"), body
    with ClusterAdmin(clusters.source) as admin:
        assert admin.watermarks(stream)[0].high == 0

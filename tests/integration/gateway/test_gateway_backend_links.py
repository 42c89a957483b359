"""A broker answers one request of a connection at a time: a fetch the gateway sends
that waits for data (up to its max wait) must not hold the gateway's other requests to
that broker (produce, metadata, other clients' fetches) behind it."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

from kio.schema.errors import ErrorCode

from harness.helpers import unique
from kmigrate.gateway.protocol.backend import Backend
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.protocol import wire
from tests.integration.conftest import Clusters

WAIT = dt.timedelta(seconds=30)


def _fetch(topic: str, partition: int, max_wait: dt.timedelta) -> Any:
    request = wire.request_type(1, 12)
    module = __import__(request.__module__, fromlist=["FetchTopic", "FetchPartition"])
    part = module.FetchPartition(partition=partition, fetch_offset=0, partition_max_bytes=1 << 20)
    return request(
        cluster_id=None, replica_id=-1, max_wait=max_wait, min_bytes=1, max_bytes=1 << 20,
        isolation_level=0, session_id=0, session_epoch=-1, rack_id="",
        topics=(module.FetchTopic(topic=topic, partitions=(part,)),), forgotten_topics_data=(),
    )  # fmt: skip


def _metadata() -> Any:
    return wire.request_type(3, 12)(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )


async def _while_a_fetch_waits(backend: Backend, topic: str) -> tuple[Any, Any, bool]:
    await backend.start()
    leader = backend.leader(topic, 0)
    assert leader is not None
    for partition in (0, 1):  # a topic just created: its leader may not serve it yet
        for _ in range(100):
            ready = await backend.call_broker(
                leader.broker, _fetch(topic, partition, dt.timedelta(0))
            )
            if ready.responses[0].partitions[0].error_code == ErrorCode.none:
                break
            await asyncio.sleep(0.1)
    waiting = asyncio.create_task(backend.call_broker(leader.broker, _fetch(topic, 0, WAIT)))
    await asyncio.sleep(0)  # the waiting fetch is sent first
    metadata = await backend.call_broker(leader.broker, _metadata())
    other = await backend.call_broker(leader.broker, _fetch(topic, 1, dt.timedelta(0)))
    still_waiting = not waiting.done()
    waiting.cancel()
    backend.close()
    return metadata, other, still_waiting


def test_a_waiting_fetch_holds_no_other_request_to_its_broker(clusters: Clusters) -> None:
    topic = unique("gw-links")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, 2)  # empty: a fetch at offset 0 waits its whole max wait
    backend = Backend(clusters.source, "test-links")
    metadata, other, still_waiting = asyncio.run(_while_a_fetch_waits(backend, topic))
    assert topic in {t.name for t in metadata.topics}
    assert other.responses[0].partitions[0].error_code == ErrorCode.none
    assert still_waiting, "metadata and a second fetch were held until the first fetch ended"

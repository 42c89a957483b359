"""A produce request whose first writes were opened, failing before it is forwarded
(pure: the gateway's bookkeeping, no broker)."""

from __future__ import annotations

import asyncio
import datetime as dt
import struct
from types import SimpleNamespace
from typing import Any

import crc32c
import pytest
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

from kmigrate.gateway.control.routes import TopicRoute
from kmigrate.gateway.serving import starts
from kmigrate.gateway.serving.first_writes import FirstWrites, Verdict


def _batch(pid: int, sequence: int) -> bytes:
    after_crc = struct.pack(">hiqqqhii", 0, 0, 1000, 1000, pid, 0, sequence, 1) + b"x"
    length = 4 + 1 + 4 + len(after_crc)
    return struct.pack(">qiibI", 0, length, 0, 2, crc32c.crc32c(after_crc)) + after_crc


def _request(*items: tuple[int, int]) -> ProduceRequest:
    """One batch of producer 7 per (partition, first sequence) of topic t."""
    return ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout=dt.timedelta(seconds=30),
        topic_data=(
            TopicProduceData(
                name="t",
                partition_data=tuple(
                    PartitionProduceData(index=p, records=_batch(7, seq)) for p, seq in items
                ),
            ),
        ),
    )


def test_first_writes_opened_by_a_request_that_fails_before_forwarding_are_settled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Partition 0's batch opens its first write; asking the backend about partition 1's
    (a later sequence) fails, as while a backend's producer ids are still loading. The
    next request of partition 0 must not wait behind a first write nobody will answer."""
    first = FirstWrites()
    state = SimpleNamespace(
        routes=SimpleNamespace(topics={"t": TopicRoute("extra")}),
        fences=SimpleNamespace(fenced=lambda _at: False),
        first_writes=first,
    )

    async def failing(_state: Any, _keys: Any) -> dict[Any, bool]:
        raise RuntimeError("the backend's producer ids are not ready")

    monkeypatch.setattr(starts, "_backend_knows", failing)

    async def scenario() -> Verdict:
        with pytest.raises(RuntimeError):
            await starts.check(state, _request((0, 0), (1, 5)))  # type: ignore[arg-type]
        return first.decide(("extra", "t", 0, 7, 0), 0, 0)

    assert asyncio.run(scenario()) is Verdict.OPEN, "partition 0's first write opens again"

"""The stored high watermarks a failover starts from, and the rule that keeps it from
renumbering what a consumer read: no fetch answer carries a high watermark (its records
end there) beyond the mark last stored. Pure: a store that is slow or fails at will,
no ZooKeeper."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Collection, Mapping

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.response import FetchableTopicResponse, FetchResponse, PartitionData

from kmigrate.config import ClusterConfig
from kmigrate.gateway.control.marks import Key, Marks, MarkStore, encode, merged
from kmigrate.gateway.control.placement import Instance
from kmigrate.gateway.protocol.backend import Backend
from kmigrate.gateway.protocol.entities import NO_THROTTLE
from kmigrate.gateway.serving import marked, split
from kmigrate.gateway.serving.dispatch import Gateway


class FakeStore:
    """Stores after a random delay; the calls numbered in ``failing`` fail. ``durable``
    is what a failover would read: the last mapping a store finished with."""

    def __init__(self, rng: random.Random, failing: Collection[int] = ()) -> None:
        self.rng = rng
        self.failing = set(failing)
        self.durable: dict[Key, int] = {}
        self.stores = 0
        self.failed = 0

    async def __call__(self, high: Mapping[Key, int]) -> None:
        self.stores += 1
        call = self.stores
        await asyncio.sleep(self.rng.uniform(0, 0.003))
        if call in self.failing:
            self.failed += 1
            raise ConnectionError("ZooKeeper away")
        self.durable = dict(high)


def _gateway(store: FakeStore) -> Gateway:
    backends = {"a": Backend(ClusterConfig(name="a", bootstrap_servers="127.0.0.1:1"), "test")}
    gateway = Gateway("gw", Instance(1, "127.0.0.1", 9092), backends, "a")
    gateway.mark_store.store = store
    return gateway


def _answer(highs: Mapping[int, int]) -> FetchResponse:
    partitions = tuple(
        PartitionData(
            partition_index=p,
            error_code=ErrorCode.none,
            high_watermark=h,
            last_stable_offset=h,
            log_start_offset=0,
            aborted_transactions=None,
            records=None,
        )
        for p, h in highs.items()
    )
    return FetchResponse(
        throttle_time=NO_THROTTLE, error_code=ErrorCode.none, session_id=0,
        responses=(FetchableTopicResponse(topic="t", partitions=partitions),),
    )  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 40), st.sets(st.integers(1, 40), max_size=8))
def test_no_fetch_answer_carries_a_high_watermark_beyond_the_stored_mark(
    seed: int, fetches: int, failing: set[int]
) -> None:
    """Many fetches at once, high watermarks growing, the store slow and some stores
    failing: every partition answered without error has its high watermark stored by
    the time the answer is given; one answered a retriable error instead waited
    through a failed store."""
    rng = random.Random(seed)
    store = FakeStore(rng, failing)
    gateway = _gateway(store)
    highs = {p: 0 for p in range(3)}

    async def one_fetch() -> None:
        await asyncio.sleep(rng.uniform(0, 0.005))
        for p in highs:
            highs[p] += rng.randint(0, 5)
        failed_before = store.failed
        answer = await marked.within_stored_marks(
            gateway, split.FETCH, "high_watermark", "a", _answer(dict(highs))
        )
        for reply in answer.responses[0].partitions:
            if reply.error_code == ErrorCode.none:
                assert reply.high_watermark <= store.durable[("a", "t", reply.partition_index)]
            else:
                assert reply.error_code == marked.RETRY
                assert reply.records is not None and not bytes(reply.records)  # librdkafka
                assert store.failed > failed_before, "held back with no store failing"

    async def scenario() -> None:
        await asyncio.gather(*(one_fetch() for _ in range(fetches)))

    asyncio.run(scenario())
    assert store.stores <= 2 * fetches


def test_concurrent_waiters_share_one_store_and_a_store_nobody_needs_is_not_made() -> None:
    store = FakeStore(random.Random(1))
    keeper = MarkStore(Marks(), store)

    async def scenario() -> None:
        await keeper.store_changes()  # nothing seen: nothing stored
        assert store.stores == 0
        await asyncio.gather(
            *(keeper.saw_and_stored([(("a", "t", p % 4), 10 + p)]) for p in range(20))
        )
        # the store starts once every waiter has noted its mark: one store for all
        assert store.stores == 1
        assert store.durable == {("a", "t", p): 26 + p for p in range(4)}
        await keeper.saw_and_stored([(("a", "t", 0), 5)])  # covered: no store
        assert store.stores == 1

    asyncio.run(scenario())


def test_a_waiter_that_gives_up_leaves_the_store_to_the_others() -> None:
    store = FakeStore(random.Random(2))
    keeper = MarkStore(Marks(), store)

    async def scenario() -> None:
        need = [(("a", "t", 0), 7)]
        impatient = asyncio.ensure_future(keeper.saw_and_stored(need))
        patient = asyncio.ensure_future(keeper.saw_and_stored(need))
        await asyncio.sleep(0)
        impatient.cancel()
        await patient
        assert store.durable == {("a", "t", 0): 7}

    asyncio.run(scenario())


def test_a_failed_store_is_offered_again_and_the_blob_format_is_unchanged() -> None:
    store = FakeStore(random.Random(3), failing={1})
    marks = Marks()
    keeper = MarkStore(marks, store)

    async def scenario() -> None:
        with contextlib.suppress(ConnectionError):
            await keeper.saw_and_stored([(("a", "t", 0), 9)])
        assert not marks.covered([(("a", "t", 0), 9)])
        await keeper.store_changes()  # the periodic store
        assert marks.covered([(("a", "t", 0), 9)])

    asyncio.run(scenario())
    assert merged([encode(store.durable)]) == {("a", "t", 0): 9}


def test_a_write_starts_the_store_its_fetch_will_wait_for() -> None:
    """`soon` (after a write's answer) starts storing at once; the fetch that then
    carries that mark joins the store under way instead of making its own."""
    store = FakeStore(random.Random(2))
    keeper = MarkStore(Marks(), store)

    async def scenario() -> None:
        keeper.soon()  # nothing seen: nothing to store
        assert store.stores == 0
        keeper.marks.saw("a", "t", 0, 42)
        keeper.soon()
        keeper.soon()  # one store under way is enough
        await keeper.saw_and_stored([(("a", "t", 0), 42)])
        assert (store.stores, store.durable) == (1, {("a", "t", 0): 42})

    asyncio.run(scenario())

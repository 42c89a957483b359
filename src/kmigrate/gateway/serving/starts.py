"""An idempotent producer's writes where its sequence starts: on a backend that does not
know it yet (kmigrate.gateway.serving.first_writes says why that needs care), and after a
move, where the origin's last sequence carries over to the target.

``check`` runs before a Produce request is split: it waits behind first writes still in
flight, asks the partition leaders about producers they may not know (DescribeProducers,
only for a batch that does not start where the producer must start), and names the
partitions to answer NOT_LEADER_OR_FOLLOWER. ``settle`` records what the backend did with
each first write.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kio.schema.errors import ErrorCode

from kmigrate.codec import batches
from kmigrate.gateway.control.partition_moves import Mode, writers_key
from kmigrate.gateway.control.producers import describe_producers_request
from kmigrate.gateway.control.routes import TopicRoute
from kmigrate.gateway.protocol.backend import BackendUnavailable
from kmigrate.gateway.serving.first_writes import Key, Verdict, next_sequence
from kmigrate.gateway.serving.messages import ProducePartition, ProduceRequest, ProduceResponse
from kmigrate.gateway.serving.state import State

Partition = tuple[str, int]  # (topic, partition)
_WRITTEN = (ErrorCode.none, ErrorCode.duplicate_sequence_number)


async def check(state: State, body: ProduceRequest) -> tuple[dict[Partition, Key], set[Partition]]:
    """The first writes ``body`` opens (to settle once answered) and the partitions whose
    batches must wait for an earlier one (answered NOT_LEADER_OR_FOLLOWER)."""
    found = _starts(state, body)
    if not found:
        return {}, set()
    first = state.first_writes
    await first.settled(key for key, _, _ in found.values())
    verdicts = {at: first.decide(key, seq, expected) for at, (key, seq, expected) in found.items()}
    asked = {at: found[at][0] for at, v in verdicts.items() if v is Verdict.ASK}
    if asked:
        try:
            knows = await _backend_knows(state, list(asked.values()))
        except BaseException:
            # Nothing of this request is forwarded: the first writes it opened are
            # settled as not written, or every later batch of those producers would wait
            # behind them (WAIT_S each, then refused) for as long as the gateway runs.
            for at, verdict in verdicts.items():
                if verdict is Verdict.OPEN:
                    first.done(found[at][0], written=False)
            raise
        for at, key in asked.items():
            verdicts[at] = first.told(key, knows.get(key, False))
    opened = {at: found[at][0] for at, v in verdicts.items() if v is Verdict.OPEN}
    return opened, {at for at, v in verdicts.items() if v is Verdict.REFUSE}


def settle(state: State, opened: dict[Partition, Key], answer: ProduceResponse | None) -> None:
    """Record what became of each first write (``answer`` None: the request failed)."""
    codes: dict[Partition, ErrorCode] = {}
    if answer is not None:
        codes = {
            (topic.name, int(reply.index)): reply.error_code
            for topic in answer.responses
            for reply in topic.partition_responses
        }
    for at, key in opened.items():
        state.first_writes.done(key, codes.get(at) in _WRITTEN)


def written_on_origin(route: TopicRoute, partition: int, item: ProducePartition) -> bool:
    """Whether ``item`` is a retried write the origin already holds (its answer was lost
    as the partition moved): sent to the target it would be written twice."""
    chain = route.migrations.get(partition)
    writers = chain[-1].writers if chain else None
    if not writers or not item.records:
        return False
    sequence = batches.sequence_of(item.records)
    last = batches.last_sequence_of(item.records)
    if sequence is None or last is None:
        return False
    held = writers.get(writers_key(sequence[0], sequence[1]))
    return held is not None and last <= held


def _starts(state: State, body: ProduceRequest) -> dict[Partition, tuple[Key, int, int]]:
    """Per partition of ``body`` with an idempotent batch the gateway forwards: its key,
    its first sequence and the sequence the producer must start with on its backend."""
    found: dict[Partition, tuple[Key, int, int]] = {}
    for topic in body.topic_data:
        route = state.routes.topics.get(topic.name)
        if route is None:
            continue
        for item in topic.partition_data:
            p = int(item.index)
            sequence = batches.sequence_of(item.records) if item.records else None
            if sequence is None or state.fences.fenced((topic.name, p)):
                continue
            if written_on_origin(route, p, item):
                continue
            pid, epoch, first = sequence
            cluster = route.cluster_of(p)
            expected = _expected(route, p, cluster, writers_key(pid, epoch))
            if expected is not None:
                found[(topic.name, p)] = ((cluster, topic.name, p, pid, epoch), first, expected)
    return found


def _expected(route: TopicRoute, partition: int, cluster: str, writer: str) -> int | None:
    """The sequence a producer's first write to ``partition`` on ``cluster`` must carry:
    one past its last on the origin when the partition moved here, else 0. None after a
    failover: the origin could not say, any sequence is taken (as by a broker)."""
    chain = route.migrations.get(partition)
    last = chain[-1] if chain else None
    if last is None or last.target != cluster:
        return 0
    if last.mode is Mode.FAILOVER and writer not in last.writers:
        return None
    return next_sequence(last.writers.get(writer))


async def _backend_knows(state: State, keys: list[Key]) -> dict[Key, bool]:
    """For each key, whether its partition's leader holds state of the producer (as the
    backend knows it). A leader that cannot say counts as not knowing."""
    wanted: dict[tuple[str, int, str], dict[int, list[tuple[Key, int]]]] = defaultdict(dict)
    for key in keys:
        cluster, topic, p, pid, epoch = key
        target = state.target(cluster, topic, p)
        if isinstance(target, ErrorCode):
            continue
        backend_pid = await _backend_producer(state, cluster, (pid, epoch))
        wanted[(cluster, target[1], topic)].setdefault(p, []).append((key, backend_pid))
    knows: dict[Key, bool] = {}
    for (cluster, broker, topic), partitions in wanted.items():
        active = await _active_producers(state, (cluster, broker), topic, list(partitions))
        for p, asked in partitions.items():
            for key, backend_pid in asked:
                knows[key] = backend_pid in active.get(p, set())
    return knows


async def _backend_producer(state: State, cluster: str, client: tuple[int, int]) -> int:
    if cluster == state.group_home.name or state.producer_ids is None:
        return client[0]
    pid, _ = await state.producer_ids.on(client, cluster)
    return pid


async def _active_producers(
    state: State, target: tuple[str, int], topic: str, partitions: list[int]
) -> dict[int, set[int]]:
    cluster, broker = target
    request = describe_producers_request(topic, partitions)
    try:  # as the gateway itself (bookkeeping), not as the client's principal
        answer: Any = await state.backends[cluster].call_broker(broker, request)
    except BackendUnavailable:
        return {}
    return {
        int(reply.partition_index): {int(s.producer_id) for s in reply.active_producers}
        for t in answer.topics
        for reply in t.partitions
        if reply.error_code == ErrorCode.none
    }

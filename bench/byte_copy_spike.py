"""Spike for issue 37: copy record batches as bytes (Fetch -> Produce over asyncio, one
process) and measure it against record-by-record copies and the broker's own reader.

    KMIGRATE_CACHE=$PWD/.cache .venv/bin/python bench/byte_copy_spike.py \\
        [--small 2000000] [--large 200000] [--dir bench/.work/spike] [--keep] [--probe]
    .venv/bin/python bench/byte_copy_spike.py --profile-summary FILE.speedscope.json ...

Two one-broker sandbox clusters in ``--dir`` (``sandbox up`` is idempotent: running
clusters are reused, and source topics already holding the data are not refilled).
The source gets one topic of ``--partitions`` partitions per case: 100 B and 10 KB
values produced by confluent-kafka uncompressed or lz4, in batches of up to 1 MB or
(``-16k`` cases) 16 KB, the Java producer's default; and a small topic of committed and
aborted transactions (correctness only). Then, per case, each on an empty target topic:

1. byte copy (``byte``: over ``LeanLink``; ``byte-gateway``: over the gateway's
   ``BrokerLink`` with kio-encoded Produce), ``--repeat`` runs, the median kept:
   Fetch v17 read_committed from the source leader; batches of aborted transactions
   and control batches dropped as a consumer drops them; every other batch produced
   unchanged (Produce v12, acks=-1, pipelined, one batch per partition per request) as
   the copier's own idempotent producer: producer id, epoch, base sequence and CRC
   rewritten, the transactional bit cleared, base offset 0; then the target compared
   with the source record by record (key, value, headers, timestamp), offsets 0..n-1;
2. ``record``: one confluent-kafka consumer -> idempotent producer loop in one process
   (today's mirror task's settings, the source's codec on the producer);
3. ``mirror``: today's ``kmigrate mirror start`` (Spark local[2 x cores]);
4. ``perf``: Kafka's ConsumerPerformance on the source.

CPU is the copier's: this process (all threads) for 1 and 2, the mirror's process tree
for 3, counted over the copy only. ``--probe`` sends hand-made batches to the target and
records each error code. Results: bench/results/byte-copy-spike-<date>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import heapq
import json
import os
import random
import struct
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cramjam
import crc32c
from common import (
    HERE,
    Bench,
    TreeSampler,
    machine,
    results_header,
    run_kmigrate_mirror,
    stop,
)
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.init_producer_id.v5.request import InitProducerIdRequest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.produce.v12.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.static.primitive import Records
from mirror_vs_mm2 import perf_consumer

from kmigrate.config import ClusterConfig, load_settings
from kmigrate.gateway.protocol.backend import BrokerLink
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.protocol import wire
from kmigrate.kafka.records import read_partition
from kmigrate.sandbox import manager
from kmigrate.sandbox.jars import DEFAULT_KAFKA_VERSION, ensure_jars

SIZES = {"100B": 100, "10KB": 10 * 1024}
CODECS = ("none", "lz4")
TXN_TOPIC = "spike-txn"
TOPIC_CONFIGS = {"max.message.bytes": "2000000"}

# --------------------------------------------------------------------- batch bytes
#
#   0 baseOffset int64   12 partitionLeaderEpoch   17 crc uint32    23 lastOffsetDelta
#   8 batchLength int32  16 magic int8             21 attributes    27 baseTimestamp ...
#  43 producerId int64   51 producerEpoch int16    53 baseSequence  57 recordCount
HEAD = struct.Struct(">qiibIhiqqqhii")  # 61 bytes
_BASE = struct.Struct(">q")
_ATTRIBUTES = struct.Struct(">h")
_IDENTITY = struct.Struct(">qhi")  # producer id, epoch, base sequence
_CRC = struct.Struct(">I")
TIMESTAMP_LOG_APPEND = 0x08
TRANSACTIONAL = 0x10
CONTROL = 0x20
ABORT = 0
LZ4_HEADER = bytes.fromhex("04224d18604082")  # magic, FLG 0x60, BD 0x40, HC
RETRIABLE = {
    ErrorCode.coordinator_load_in_progress,
    ErrorCode.coordinator_not_available,
    ErrorCode.not_coordinator,
}


@dataclass(frozen=True)
class BatchHead:
    start: int
    end: int
    base: int
    last_delta: int
    attributes: int
    producer_id: int
    count: int

    @property
    def last_offset(self) -> int:
        return self.base + self.last_delta


def heads(records: bytes) -> Iterator[BatchHead]:
    """Every whole batch of fetched ``records`` (a last one cut short by the fetch size
    is left for the next fetch)."""
    start, size = 0, len(records)
    while size - start >= HEAD.size:
        base, length, _, magic, _, attrs, last, _, _, pid, _, _, count = HEAD.unpack_from(
            records, start
        )
        end = start + 12 + length
        if end > size:
            return
        if magic != 2:
            raise ValueError(f"record batch magic {magic} at offset {base}")
        yield BatchHead(start, end, base, last, attrs, pid, count)
        start = end


def _varint(data: bytes, at: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[at]
        at += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), at
        shift += 7


def marker_type(records: bytes, head: BatchHead) -> int:
    """0 (abort) or 1 (commit): the type in a control batch's one record's key."""
    at = head.start + HEAD.size
    _, at = _varint(records, at)  # record length
    at += 1  # record attributes
    for _ in range(3):  # timestamp delta, offset delta, key length
        _, at = _varint(records, at)
    return int(struct.unpack_from(">h", records, at + 2)[0])


def committed(records: bytes, aborted: Any, position: int) -> tuple[list[BatchHead], int]:
    """The batches of one partition's fetched ``records`` a read_committed consumer
    would read, and the offset after the last whole batch. ``aborted``: the fetch
    response's (producer id, first offset) list, applied as the Java consumer does."""
    pending = sorted((int(a.first_offset), int(a.producer_id)) for a in aborted or ())
    heapq.heapify(pending)
    aborting: set[int] = set()
    kept: list[BatchHead] = []
    for head in heads(records):
        if head.last_offset < position:
            continue  # before the fetch offset (a fetch may start inside a batch)
        if head.base < position:
            raise ValueError(f"a batch straddles offset {position}: not handled by the spike")
        while pending and pending[0][0] <= head.last_offset:
            aborting.add(heapq.heappop(pending)[1])
        position = head.last_offset + 1
        if head.attributes & CONTROL:
            if head.producer_id in aborting and marker_type(records, head) == ABORT:
                aborting.discard(head.producer_id)
        elif not (head.attributes & TRANSACTIONAL and head.producer_id in aborting):
            kept.append(head)
    return kept, position


def rewrite(
    records: bytes, kept: list[BatchHead], producer: tuple[int, int], sequence: int
) -> tuple[list[tuple[bytes, memoryview, int]], int]:
    """``kept`` batches as the copier's idempotent producer sends them: each as its
    patched 61-byte header, a view of its records (never copied here) and the offsets it
    takes; and the next base sequence. The CRC is computed over the new header's tail
    and then the records, without joining them."""
    view, batches = memoryview(records), []
    for h in kept:
        head = bytearray(view[h.start : h.start + HEAD.size])
        _BASE.pack_into(head, 0, 0)  # brokers refuse a client batch not based at 0
        _ATTRIBUTES.pack_into(head, 21, h.attributes & ~TRANSACTIONAL)
        _IDENTITY.pack_into(head, 43, producer[0], producer[1], sequence)
        body = view[h.start + HEAD.size : h.end]
        _CRC.pack_into(head, 17, crc32c.crc32c(body, crc32c.crc32c(head[21:])))
        sequence = (sequence + h.last_delta + 1) % 2**31  # the broker's lastSequence + 1
        batches.append((bytes(head), body, h.last_delta + 1))
    return batches, sequence


# --------------------------------------------------------------------- the byte copy


@dataclass
class PartitionCopy:
    """One partition's progress: source position, target sequence and next offset."""

    partition: int
    end: int
    position: int = 0
    sequence: int = 0
    target_next: int = 0


@dataclass
class CopyStats:
    records: int = 0
    wire_bytes: int = 0
    fetches: int = 0
    produces: int = 0
    seconds: float = 0.0
    cpu_s: float = 0.0


def _address(config: ClusterConfig) -> tuple[str, int]:
    host, _, port = config.bootstrap_servers.split(",")[0].rpartition(":")
    return host, int(port)


async def topic_layout(link: BrokerLink, topic: str) -> tuple[uuid.UUID, dict[int, tuple]]:
    """The topic's id and each partition's leader (host, port)."""
    answer = await link.call(
        MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=None, name=topic),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
    )
    brokers = {int(b.node_id): (b.host, int(b.port)) for b in answer.brokers}
    (found,) = answer.topics
    if found.error_code != ErrorCode.none:
        raise RuntimeError(f"metadata of {topic}: {found.error_code.name}")
    return found.topic_id, {int(p.partition_index): brokers[p.leader_id] for p in found.partitions}


async def idempotent_producer(link: BrokerLink, wait_s: float = 60.0) -> tuple[int, int]:
    """A fresh idempotent (not transactional) producer id and epoch from the cluster
    (retried while a just-started broker is still loading its coordinators)."""
    deadline = time.monotonic() + wait_s
    while True:
        answer = await link.call(
            InitProducerIdRequest(
                transactional_id=None, transaction_timeout=dt.timedelta(minutes=1)
            )
        )
        if answer.error_code == ErrorCode.none:
            return int(answer.producer_id), int(answer.producer_epoch)
        if answer.error_code not in RETRIABLE or time.monotonic() > deadline:
            raise RuntimeError(f"InitProducerId: {answer.error_code.name}")
        await asyncio.sleep(0.5)


class FrameReader(asyncio.BufferedProtocol):
    """Kafka frames received straight into one buffer per frame (no StreamReader)."""

    def __init__(self, link: LeanLink) -> None:
        self.link = link
        self.head = bytearray(4)
        self.frame: bytearray | None = None
        self.view, self.filled = memoryview(self.head), 0

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.view[self.filled :]

    def buffer_updated(self, nbytes: int) -> None:
        self.filled += nbytes
        if self.filled < len(self.view):
            return
        if self.frame is None:
            self.frame = bytearray(int.from_bytes(self.head, "big"))
            self.view, self.filled = memoryview(self.frame), 0
        else:
            frame, self.frame = self.frame, None
            self.view, self.filled = memoryview(self.head), 0
            self.link.answered(frame)

    def connection_lost(self, exc: Exception | None) -> None:
        self.link.lost(exc)


class LeanLink:
    """One connection to one broker, as lean as asyncio allows: frames land in their
    own buffer (``FrameReader``), responses are decoded by kio, and Produce requests are
    written as a list of chunks (the batches' records are never copied into a request
    buffer: ``writelines`` hands them to the socket)."""

    def __init__(self, host: str, port: int) -> None:
        self.address = (host, port)
        self.transport: asyncio.Transport | None = None
        self.pending: dict[int, tuple[asyncio.Future[Any], int, int]] = {}
        self.next = 0
        self.opening = asyncio.Lock()

    async def _open(self) -> asyncio.Transport:
        async with self.opening:  # one connection, however many callers race to open it
            if self.transport is None:
                loop = asyncio.get_running_loop()
                transport, _ = await loop.create_connection(
                    lambda: FrameReader(self), *self.address
                )
                self.transport = transport  # type: ignore[assignment]
        assert self.transport is not None
        return self.transport

    def _expect(self, api_key: int, version: int) -> tuple[int, asyncio.Future[Any]]:
        self.next += 1
        future = asyncio.get_running_loop().create_future()
        self.pending[self.next] = (future, api_key, version)
        return self.next, future

    async def call(self, body: Any) -> Any:
        transport = await self._open()
        correlation, future = self._expect(type(body).__api_key__, type(body).__version__)
        transport.write(wire.encode_request(body, correlation, "spike-copy"))
        return await future

    async def produce(self, topic: str, parts: list[tuple[int, bytes, memoryview]]) -> Any:
        """Produce v12, acks=-1: one batch (header, records) per partition."""
        transport = await self._open()
        correlation, future = self._expect(0, 12)
        transport.writelines(produce_frame(correlation, topic, parts))
        return await future

    def answered(self, frame: bytearray) -> None:
        future, api_key, version = self.pending.pop(int.from_bytes(frame[:4], "big"))
        try:  # kio reads read-only buffers: a read-only view, not a copy
            body = wire.decode_response(memoryview(frame).toreadonly(), api_key, version)[1]
        except wire.FrameError as exc:
            future.set_exception(exc)
        else:
            future.set_result(body)

    def lost(self, exc: Exception | None) -> None:
        self.transport = None
        pending, self.pending = self.pending, {}
        for future, _, _ in pending.values():
            if not future.done():
                future.set_exception(ConnectionError(f"{self.address}: {exc or 'closed'}"))

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def produce_frame(
    correlation: int, topic: str, parts: list[tuple[int, bytes, memoryview]]
) -> list[bytes | memoryview]:
    """A Produce v12 request (flexible; header v2, client id "spike-copy", no
    transactional id, acks=-1, timeout 30 s) as chunks to write in order."""
    name = topic.encode()
    chunks: list[bytes | memoryview] = [
        struct.pack(">hhih", 0, 12, correlation, 10) + b"spike-copy\0"  # + no tags
        + b"\0" + struct.pack(">hi", -1, 30_000)  # no transactional id, acks, timeout
        + _uvarint(2) + _uvarint(len(name) + 1) + name + _uvarint(len(parts) + 1)
    ]  # fmt: skip
    for partition, head, body in parts:
        chunks += [struct.pack(">i", partition) + _uvarint(len(head) + len(body) + 1), head, body]
        chunks.append(b"\0")  # the partition's tagged fields
    chunks.append(b"\0\0")  # the topic's and the request's tagged fields
    size = sum(len(c) for c in chunks)
    return [struct.pack(">i", size), *chunks]


Part = tuple[PartitionCopy, bytes, memoryview, int]  # state, batch header, records, offsets


class ProduceSink:
    """Produce requests to one target leader, ``in_flight`` at most at once on one
    connection; each answer is checked against the offsets the copier predicts."""

    def __init__(self, link: BrokerLink | LeanLink, topic: str, in_flight: int) -> None:
        self.link, self.topic = link, topic
        self.slots = asyncio.Semaphore(in_flight)
        self.tasks: set[asyncio.Task[None]] = set()
        self.failure: BaseException | None = None
        self.requests = 0

    async def send(self, parts: list[Part]) -> None:
        """Queue one request; returns once it is written (answers come later)."""
        if self.failure is not None:
            raise self.failure
        await self.slots.acquire()
        expected = {}
        for state, _, _, offsets in parts:
            expected[state.partition] = state.target_next
            state.target_next += offsets
        if isinstance(self.link, LeanLink):
            call = self.link.produce(self.topic, [(s.partition, h, b) for s, h, b, _ in parts])
        else:
            call = self.link.call(
                ProduceRequest(
                    transactional_id=None,
                    acks=-1,
                    timeout=dt.timedelta(seconds=30),
                    topic_data=(
                        TopicProduceData(
                            name=self.topic,
                            partition_data=tuple(
                                PartitionProduceData(index=s.partition, records=h + b)
                                for s, h, b, _ in parts
                            ),
                        ),
                    ),
                )
            )
        # Tasks start in creation order, so requests go out in sequence order.
        task = asyncio.create_task(self._call(call, expected))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        self.requests += 1

    async def _call(self, call: Any, expected: dict[int, int]) -> None:
        try:
            answer = await call
            for reply in answer.responses[0].partition_responses:
                want = expected[int(reply.index)]
                if reply.error_code != ErrorCode.none or reply.base_offset != want:
                    raise RuntimeError(
                        f"{self.topic}[{reply.index}]: {reply.error_code.name} at "
                        f"{reply.base_offset}, expected {want} ({reply.error_message})"
                    )
        except BaseException as exc:
            self.failure = self.failure or exc
        finally:
            self.slots.release()

    async def drain(self) -> None:
        while self.tasks:
            await asyncio.gather(*list(self.tasks))
        if self.failure is not None:
            raise self.failure


def fetch_request(topic_id: uuid.UUID, parts: list[PartitionCopy], part_bytes: int) -> Any:
    return FetchRequest(
        max_wait=dt.timedelta(milliseconds=100),
        min_bytes=1,
        max_bytes=64 * 1024 * 1024,
        isolation_level=1,
        topics=(
            FetchTopic(
                topic_id=topic_id,
                partitions=tuple(
                    FetchPartition(
                        partition=p.partition,
                        fetch_offset=p.position,
                        partition_max_bytes=part_bytes,
                    )
                    for p in parts
                ),
            ),
        ),
        forgotten_topics_data=(),
    )


async def copy_from_leader(
    link: BrokerLink | LeanLink,
    topic_id: uuid.UUID,
    parts: dict[int, PartitionCopy],
    sinks: dict[int, ProduceSink],
    producer: tuple[int, int],
    part_bytes: int,
    stats: CopyStats,
) -> None:
    """Fetch ``parts`` from their source leader until each reaches its end. A Produce
    request carries one batch per partition (brokers refuse more), so a fetch answer
    with k batches of a partition becomes k requests per target leader, in order."""
    while pending := [p for p in parts.values() if p.position < p.end]:
        answer = await link.call(fetch_request(topic_id, pending, part_bytes))
        stats.fetches += 1
        rounds: list[dict[ProduceSink, list[Part]]] = []
        for data in answer.responses[0].partitions:
            if data.error_code != ErrorCode.none:
                raise RuntimeError(f"fetch [{data.partition_index}]: {data.error_code.name}")
            state = parts[int(data.partition_index)]
            records = data.records or b""
            kept, state.position = committed(records, data.aborted_transactions, state.position)
            batches, state.sequence = rewrite(records, kept, producer, state.sequence)
            stats.records += sum(h.count for h in kept)
            stats.wire_bytes += sum(len(h) + len(b) for h, b, _ in batches)
            for index, (head, body, offsets) in enumerate(batches):
                if index == len(rounds):
                    rounds.append({})
                rounds[index].setdefault(sinks[state.partition], []).append(
                    (state, head, body, offsets)
                )
        for round_ in rounds:
            for sink, items in round_.items():
                await sink.send(items)


async def byte_copy(
    source: ClusterConfig,
    target: ClusterConfig,
    topic: str,
    ends: dict[int, int],
    *,
    in_flight: int = 4,
    part_bytes: int = 4 * 1024 * 1024,
    connections: int = 1,
    lean: bool = False,
) -> CopyStats:
    """Copy ``topic`` partitions [0, end) from ``source`` to the same partitions of
    ``target`` (empty), batch for batch. Exact for a static source: the target ends
    with every committed record once, in order, at offsets 0..n-1.

    A broker serves one connection's requests one at a time: ``connections`` lanes per
    leader on each side, partition p in lane p % connections (one lane per partition
    keeps its batches, hence its sequences, in order)."""
    boot_s = BrokerLink(*_address(source), "spike-copy", None)
    boot_t = BrokerLink(*_address(target), "spike-copy", None)
    source_id, source_leaders = await topic_layout(boot_s, topic)
    _, target_leaders = await topic_layout(boot_t, topic)
    producer = await idempotent_producer(boot_t)
    fetch_lanes: dict[tuple, dict[int, PartitionCopy]] = {}
    for p, end in ends.items():
        lane = (source_leaders[p], p % connections)
        fetch_lanes.setdefault(lane, {})[p] = PartitionCopy(p, end)

    def connect(address: tuple[str, int]) -> BrokerLink | LeanLink:
        return LeanLink(*address) if lean else BrokerLink(*address, "spike-copy", None)

    links = {lane: connect(lane[0]) for lane in fetch_lanes}
    sink_of: dict[tuple, ProduceSink] = {}
    for p in ends:
        lane = (target_leaders[p], p % connections)
        if lane not in sink_of:
            sink_of[lane] = ProduceSink(connect(lane[0]), topic, in_flight)
    sinks = {p: sink_of[(target_leaders[p], p % connections)] for p in ends}
    stats = CopyStats()
    started, cpu = time.perf_counter(), time.process_time()
    try:
        await asyncio.gather(
            *(
                copy_from_leader(links[lane], source_id, parts, sinks, producer, part_bytes, stats)
                for lane, parts in fetch_lanes.items()
            )
        )
        for sink in sink_of.values():
            await sink.drain()
        stats.seconds = time.perf_counter() - started
        stats.cpu_s = time.process_time() - cpu
        stats.produces = sum(s.requests for s in sink_of.values())
    finally:
        for link in [boot_s, boot_t, *links.values(), *(s.link for s in sink_of.values())]:
            link.close()
    return stats


# --------------------------------------------------------------------- record by record

CONSUMER = {
    "group.id": "spike-record-copy",
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "isolation.level": "read_committed",
    "fetch.wait.max.ms": 20,
    "fetch.max.bytes": 64 * 1024 * 1024,
    "max.partition.fetch.bytes": 8 * 1024 * 1024,
    "queued.max.messages.kbytes": 128 * 1024,
}
PRODUCER = {
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "message.max.bytes": 100 * 1024 * 1024,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 256 * 1024,
}


def record_copy(
    source: ClusterConfig, target: ClusterConfig, topic: str, ends: dict[int, int], codec: str
) -> CopyStats:
    """One consumer -> producer loop in this process, as today's mirror task does it
    (key, value, headers, timestamp, same partition; the source's codec)."""
    consumer = Consumer({**source.as_librdkafka(), **CONSUMER})
    failures: list[Any] = []
    producer = Producer(
        {
            **target.as_librdkafka(),
            **PRODUCER,
            "compression.type": codec,
            "error_cb": failures.append,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in ends])
    remaining, stats = sum(ends.values()), CopyStats()
    started, cpu = time.perf_counter(), time.process_time()
    try:
        while remaining > 0:
            for m in consumer.consume(10_000, 1.0):
                if m.error() is not None:
                    raise RuntimeError(m.error())
                kwargs = {"partition": m.partition(), "timestamp": m.timestamp()[1]}
                headers = m.headers()
                if headers:
                    kwargs["headers"] = headers
                _produce(producer, topic, m.value(), m.key(), kwargs)
                remaining -= 1
                stats.records += 1
            producer.poll(0)
        if producer.flush(120) or failures:
            raise RuntimeError(f"record copy: undelivered or failed ({failures[:3]})")
        stats.seconds = time.perf_counter() - started
        stats.cpu_s = time.process_time() - cpu
    finally:
        consumer.close()
    return stats


def _produce(producer: Producer, topic: str, value: Any, key: Any, kwargs: dict) -> None:
    while True:
        try:
            producer.produce(topic, value, key, **kwargs)
            return
        except BufferError:
            producer.poll(0.05)


def mirror_copy(ctx: Context, topic: str, ends: dict[int, int], payload: int) -> dict:
    """Today's mirror (``kmigrate mirror start``, Spark local[2 x cores]) on the same
    topic: time and CPU (its whole process tree) from the first record on the target to
    the last; start-up reported apart."""
    delete_topic(ctx.target_admin, topic)
    settle()
    bench = Bench(load_settings(ctx.config), ctx.config, ctx.jars, ctx.jars)
    proc = run_kmigrate_mirror(bench, topic, f"spike-{uuid.uuid4().hex[:8]}")
    sampler = TreeSampler(proc.pid)
    sampler.start()
    start, first, cpu_first = time.monotonic(), None, 0.0
    try:
        while True:
            got = ends_of(ctx.target, topic, ctx.args.partitions, timeout=2)
            now = time.monotonic()
            if first is None and sum(got.values()) > 0:
                sampler.sample()
                first, cpu_first = now, sampler.cpu_s()
            if all(got.get(p, 0) >= end for p, end in ends.items()):
                sampler.sample()
                break
            if now - start > 1800:
                raise RuntimeError(f"today's mirror did not copy {topic} within 30 min")
            time.sleep(0.1)
        seconds, cpu = now - (first or now), sampler.cpu_s() - cpu_first
    finally:
        stop(proc, group=False)
        sampler.stop()
    total = sum(ends.values())
    return {
        "records": total,
        "startup_s": round((first or now) - start, 1),
        **rates(CopyStats(total, 0, 0, 0, seconds, cpu), payload, total),
    }


# --------------------------------------------------------------------- data and checks


def values(size: int, n: int = 4096) -> list[bytes]:
    """Distinct values like JSON events: half repeated text, half random letters (lz4
    shrinks them to about two thirds, as it does real payloads)."""
    rng = random.Random(37)
    letters = bytes(
        b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[i % 62]
        for i in range(256)
    )
    out = []
    for i in range(n):
        text = b'{"event":"page_view","source":"web","id":%d,"pad":"' % i
        body = rng.randbytes(size // 2).translate(letters)
        filler = (text + body + b'","tail":"' + b"lorem ipsum dolor sit amet " * 400)[: size - 2]
        out.append(filler + b'"}')
    return out


def fill(
    config: ClusterConfig,
    topic: str,
    partitions: int,
    n: int,
    size: int,
    codec: str,
    batch_bytes: int = 1_000_000,
) -> None:
    """``n`` records of ``size`` bytes over the topic's partitions (round robin), keys
    on every record, a header on every tenth, in batches of up to ``batch_bytes``."""
    producer = Producer(
        {
            **config.as_librdkafka(),
            "acks": "all",
            "enable.idempotence": True,
            "compression.type": codec,
            "linger.ms": 20,
            "batch.size": batch_bytes,
            "queue.buffering.max.kbytes": 512 * 1024,
        }
    )
    pool = values(size)
    for i in range(n):
        kwargs: dict[str, Any] = {"partition": i % partitions}
        if i % 10 == 0:
            kwargs["headers"] = [("trace", b"%016x" % i)]
        _produce(producer, topic, pool[i % len(pool)], b"key-%d" % (i % 10_000), kwargs)
        if i % 50_000 == 0:
            producer.poll(0)
    if producer.flush(300):
        raise RuntimeError(f"filling {topic}: records left undelivered")


def fill_transactions(config: ClusterConfig, topic: str, rounds: int = 40) -> None:
    """Committed and aborted transactions, interleaved with plain idempotent writes."""
    plain = Producer({**config.as_librdkafka(), "enable.idempotence": True, "linger.ms": 1})
    txn = Producer({**config.as_librdkafka(), "transactional.id": f"spike-{uuid.uuid4()}"})
    txn.init_transactions(30)
    for r in range(rounds):
        txn.begin_transaction()
        for i in range(25):
            txn.produce(topic, b"txn-%d-%d" % (r, i), b"k%d" % i, partition=i % 2)
            if i % 10 == 0:
                plain.produce(topic, b"plain-%d-%d" % (r, i), partition=i % 2)
                plain.flush(30)
        txn.flush(30)
        (txn.abort_transaction if r % 3 == 1 else txn.commit_transaction)(30)
    plain.flush(30)


def ends_of(
    config: ClusterConfig, topic: str, partitions: int, timeout: float = 10
) -> dict[int, int]:
    """Each partition's high watermark (0 for a partition not there yet)."""
    consumer = Consumer({**config.as_librdkafka(), "group.id": "spike-ends"})
    try:
        return {p: _high(consumer, topic, p, timeout) for p in range(partitions)}
    finally:
        consumer.close()


def _high(consumer: Consumer, topic: str, partition: int, timeout: float) -> int:
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout)[1])
    except KafkaException:
        return 0


def compare(source: ClusterConfig, target: ClusterConfig, topic: str, ends: dict) -> dict:
    """Target equals source record by record (committed order), offsets 0..n-1."""
    checked, problems = 0, []
    for p, end in ends.items():
        src = read_partition(source, topic, p, 0, end, timeout=600)
        dst = read_partition(target, topic, p, 0, 2**62, timeout=600)
        if [r.offset for r in dst] != list(range(len(dst))):
            problems.append(f"[{p}] target offsets are not 0..{len(dst) - 1}")
        if len(src) != len(dst):
            problems.append(f"[{p}] {len(src)} source records, {len(dst)} on the target")
        for a, b in zip(src, dst, strict=False):
            if (a.key, a.value, a.headers, a.timestamp) != (b.key, b.value, b.headers, b.timestamp):
                problems.append(f"[{p}] source offset {a.offset} differs at target {b.offset}")
                break
        checked += len(dst)
    return {"records_compared": checked, "equal": not problems, "problems": problems[:10]}


def delete_topic(admin: ClusterAdmin, topic: str) -> None:
    """``topic`` gone from ``admin``'s cluster (if it was there)."""
    if any(t.name == topic for t in admin.list_topics()):
        admin.delete_topics([topic])
        deadline = time.monotonic() + 60
        while any(t.name == topic for t in admin.list_topics()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{topic} was not deleted within 60s")
            time.sleep(0.3)


def recreate(admin: ClusterAdmin, topic: str, partitions: int) -> None:
    """``topic`` empty on ``admin``'s cluster (deleted first if present)."""
    delete_topic(admin, topic)
    for _ in range(60):  # a just-deleted name may be refused for a moment
        try:
            admin.create_topic(topic, partitions, configs=TOPIC_CONFIGS)
            break
        except Exception:
            time.sleep(0.5)
    else:
        admin.create_topic(topic, partitions, configs=TOPIC_CONFIGS)
    wait_ready(admin.cluster, topic, partitions)


def wait_ready(config: ClusterConfig, topic: str, partitions: int, wait_s: float = 60) -> None:
    """Until the cluster's metadata names a leader for each of ``partitions``."""
    consumer = Consumer({**config.as_librdkafka(), "group.id": "spike-ready"})
    deadline = time.monotonic() + wait_s
    try:
        while time.monotonic() < deadline:
            found = consumer.list_topics(topic, timeout=10).topics.get(topic)
            leaders = [p.leader for p in found.partitions.values()] if found else []
            if found and found.error is None and len(leaders) == partitions and min(leaders) >= 0:
                return
            time.sleep(0.2)
    finally:
        consumer.close()
    raise RuntimeError(f"{topic}: no leader for every partition within {wait_s:g}s")


# --------------------------------------------------------------------- the run


def rates(stats: CopyStats, payload: int, total: int) -> dict:
    return {
        "records": stats.records,
        "seconds": round(stats.seconds, 3),
        "records_per_s": round(total / stats.seconds),
        "mb_per_s": round(payload / stats.seconds / 1e6, 1),
        "cpu_s": round(stats.cpu_s, 3),
        "cpu_s_per_mb": round(stats.cpu_s / (payload / 1e6), 5),
    }


def run_case(ctx: Context, topic: str, size: int, codec: str) -> dict:
    ends = ends_of(ctx.source, topic, ctx.args.partitions)
    total = sum(ends.values())
    payload = total * size
    result: dict[str, Any] = {"records": total, "payload_mb": round(payload / 1e6, 1)}
    for contender, key, lean in BYTE_CONTENDERS:
        if contender not in ctx.args.only:
            continue
        result[key] = repeated_byte_copy(ctx, topic, ends, payload, lean=lean)
        print(f"{topic} {key}: {json.dumps(result[key])}", flush=True)
        if ctx.args.verify:
            result[key]["check"] = compare(ctx.source, ctx.target, topic, ends)
            print(f"{topic} {key} check: {json.dumps(result[key]['check'])}", flush=True)
    if "byte" in ctx.args.only and ctx.args.lanes_sweep:
        result["byte_copy_by_lanes"] = {}
        for lanes in (int(k) for k in ctx.args.lanes_sweep.split(",")):
            found = repeated_byte_copy(ctx, topic, ends, payload, lean=True, connections=lanes)
            result["byte_copy_by_lanes"][lanes] = found
            print(f"{topic} byte_copy over {lanes} lane(s): {json.dumps(found)}", flush=True)
    if "record" in ctx.args.only:
        recreate(ctx.target_admin, topic, ctx.args.partitions)
        settle()
        stats = record_copy(ctx.source, ctx.target, topic, ends, codec)
        result["record_copy"] = rates(stats, payload, total)
        print(f"{topic} record copy: {json.dumps(result['record_copy'])}", flush=True)
    if "mirror" in ctx.args.only:
        result["mirror_today"] = mirror_copy(ctx, topic, ends, payload)
        print(f"{topic} today's mirror: {json.dumps(result['mirror_today'])}", flush=True)
    if "perf" in ctx.args.only:
        settle()
        result["consumer_performance"] = perf_consumer(
            ctx.jars, ctx.source.bootstrap_servers, topic, total
        )
        print(f"{topic} ConsumerPerformance: {json.dumps(result['consumer_performance'])}")
    return result


def settle() -> None:
    """Dirty pages written out before a timed copy: each contender writes up to 2 GB,
    and the kernel's writeback of one run's pages would otherwise slow the next."""
    os.sync()


# (--only name, results key, over LeanLink): the gateway's BrokerLink is what exists.
BYTE_CONTENDERS = (("byte", "byte_copy", True), ("byte-gateway", "byte_copy_gateway_link", False))


def repeated_byte_copy(
    ctx: Context,
    topic: str,
    ends: dict[int, int],
    payload: int,
    *,
    lean: bool,
    connections: int | None = None,
) -> dict:
    """The byte copy ``--repeat`` times onto an empty target; the median run's figures
    (by records/s), and every run's records/s."""
    runs = []
    for _ in range(ctx.args.repeat):
        recreate(ctx.target_admin, topic, ctx.args.partitions)
        settle()
        stats = asyncio.run(
            byte_copy(
                ctx.source,
                ctx.target,
                topic,
                ends,
                in_flight=ctx.args.in_flight,
                part_bytes=ctx.args.part_bytes,
                connections=connections or ctx.args.connections,
                lean=lean,
            )
        )
        total = sum(ends.values())
        runs.append(
            {
                **rates(stats, payload, total),
                "wire_mb": round(stats.wire_bytes / 1e6, 1),
                "fetches": stats.fetches,
                "produce_requests": stats.produces,
            }
        )
    median = sorted(runs, key=lambda r: r["records_per_s"])[len(runs) // 2]
    return {**median, "runs_records_per_s": [r["records_per_s"] for r in runs]}


@dataclass
class Context:
    args: argparse.Namespace
    source: ClusterConfig
    target: ClusterConfig
    source_admin: ClusterAdmin
    target_admin: ClusterAdmin
    jars: Path
    config: Path  # kmigrate's config for the sandbox (today's mirror reads it)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=2_000_000, help="100 B records per topic")
    parser.add_argument("--large", type=int, default=200_000, help="10 KB records per topic")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--dir", type=Path, default=HERE / ".work" / "spike")
    parser.add_argument("--keep", action="store_true", help="Leave the clusters running.")
    parser.add_argument(
        "--cases",
        default="100B-none,100B-lz4,10KB-none,10KB-lz4,100B-none-16k,10KB-none-16k",
        help="SIZE-CODEC[-BATCHk]: source batches of BATCH KB (default 1 MB)",
    )
    parser.add_argument(
        "--only",
        default="byte,byte-gateway,record,mirror,perf",
        help="contenders to run, in this order (byte: over LeanLink; byte-gateway: over "
        "the gateway's BrokerLink and kio-encoded Produce)",
    )
    parser.add_argument("--no-verify", dest="verify", action="store_false")
    parser.add_argument("--repeat", type=int, default=3, help="byte copy runs per case")
    parser.add_argument("--in-flight", type=int, default=4)
    parser.add_argument(
        "--connections", type=int, default=4, help="byte copy lanes (connections) per leader"
    )
    parser.add_argument(
        "--lanes-sweep", default="1,2", help="also the byte copy (LeanLink) over these lanes"
    )
    parser.add_argument("--part-bytes", type=int, default=4 * 1024 * 1024)
    parser.add_argument("--probe", action="store_true", help="Run the Produce probes.")
    parser.add_argument("--no-write", dest="write", action="store_false")
    parser.add_argument(
        "--profile-summary",
        type=Path,
        nargs="+",
        help="Summarise py-spy --idle speedscope files (into bench/results/"
        "byte-copy-spike-<date>-profiles.json unless --no-write); exit.",
    )
    args = parser.parse_args()
    args.only = args.only.split(",")
    if args.profile_summary:
        # A dict with its date, as every results file (tools/docs/benchmarks.py reads them).
        summaries = {
            "date": dt.date.today().isoformat(),
            "profiles": [summarise_profile(path) for path in args.profile_summary],
        }
        print(json.dumps(summaries, indent=2))
        if args.write:
            out = HERE / "results" / f"byte-copy-spike-{summaries['date']}-profiles.json"
            out.write_text(json.dumps(summaries, indent=2) + "\n")
            print(f"wrote {out}")
        return

    manager.up(args.dir, manager.UpRequest(clusters=("source", "target")))
    try:
        run(args)
    finally:
        if not args.keep:
            manager.down(args.dir, purge=True, grace=10)


def run(args: argparse.Namespace) -> None:
    settings = load_settings(args.dir / "clusters.yaml")
    source, target = settings.cluster("source"), settings.cluster("target")
    results: dict[str, Any] = {
        **results_header(args.partitions),
        "machine": machine(),
        "data": {"100B": args.small, "10KB": args.large},
        "settings": {
            "in_flight": args.in_flight,
            "partition_max_bytes": args.part_bytes,
            "connections": args.connections,
            "lanes_sweep": args.lanes_sweep,
        },
    }
    with ClusterAdmin(source) as sa, ClusterAdmin(target) as ta:
        jars = ensure_jars(DEFAULT_KAFKA_VERSION)
        ctx = Context(args, source, target, sa, ta, jars, mirror_config(args.dir))
        prepare(ctx)
        results["cases"] = {}
        for case in args.cases.split(","):
            size_name, codec, _ = parse_case(case)
            results["cases"][case] = run_case(ctx, f"spike-{case}", SIZES[size_name], codec)
        if args.verify and {"byte", "byte-gateway"} & set(args.only):
            results["transactions"] = check_transactions(ctx)
        if args.probe:
            results["probes"] = asyncio.run(run_probes(source, target, ta))
    results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    summarise(results)
    if args.write:
        out = HERE / "results" / f"byte-copy-spike-{results['date']}.json"
        out.write_text(json.dumps(results, indent=2) + "\n")
        print(f"wrote {out}")


def mirror_config(directory: Path) -> Path:
    """The sandbox's clusters.yaml with absolute paths and a store of its own."""
    config = directory / "kmigrate.yaml"
    config.write_text(
        (directory / "clusters.yaml")
        .read_text()
        .replace("env_file: secrets.env", f"env_file: {directory / 'secrets.env'}")
        .replace("sqlite:///kmigrate.db", f"sqlite:///{directory / 'kmigrate.db'}")
    )
    return config


def parse_case(case: str) -> tuple[str, str, int]:
    """ "100B-lz4" -> ("100B", "lz4", 1 MB batches); "10KB-none-16k" -> 16 KB batches
    (the Java producer's default batch.size: what most real source logs hold)."""
    size_name, codec, *batch = case.split("-")
    return size_name, codec, int(batch[0].rstrip("k")) * 1024 if batch else 1_000_000


def prepare(ctx: Context) -> None:
    """Source topics filled once (kept across runs in the same ``--dir``)."""
    counts = {"100B": ctx.args.small, "10KB": ctx.args.large}
    for case in ctx.args.cases.split(","):
        size_name, codec, batch_bytes = parse_case(case)
        topic, n = f"spike-{case}", counts[size_name]
        have = [t.name for t in ctx.source_admin.list_topics()]
        if topic in have and sum(ends_of(ctx.source, topic, ctx.args.partitions).values()) == n:
            continue
        recreate(ctx.source_admin, topic, ctx.args.partitions)
        print(f"filling {topic} with {n} records ...", flush=True)
        fill(ctx.source, topic, ctx.args.partitions, n, SIZES[size_name], codec, batch_bytes)


def check_transactions(ctx: Context) -> dict:
    """Aborted transactions and markers are dropped, committed ones copied."""
    recreate(ctx.source_admin, TXN_TOPIC, 2)
    fill_transactions(ctx.source, TXN_TOPIC)
    recreate(ctx.target_admin, TXN_TOPIC, 2)
    ends = ends_of(ctx.source, TXN_TOPIC, 2)
    stats = asyncio.run(byte_copy(ctx.source, ctx.target, TXN_TOPIC, ends))
    result = {
        "source_offsets": sum(ends.values()),
        "copied": stats.records,
        "check": compare(ctx.source, ctx.target, TXN_TOPIC, ends),
    }
    print(f"transactions: {json.dumps(result)}", flush=True)
    return result


# Today's mirror vs MirrorMaker 2 in bench/results/2026-11-22.json (records/s, same
# machine): the byte copy's expected ratio to MM2 is its ratio to today's mirror times this.
MIRROR_VS_MM2_2026_11_22 = {"100B": 1.36, "10KB": 2.15}
OTHERS = {
    "byte_copy_gateway_link": "gateway_link",
    "record_copy": "record",
    "mirror_today": "mirror",
}


def summarise(results: dict) -> None:
    """Ratios per case: byte copy (LeanLink) to each other contender, in records/s and
    in CPU seconds per MB; and the ratio to MM2 expected from the 2026-11-22 run."""
    for case, r in results["cases"].items():
        byte = r.get("byte_copy")
        if not byte:
            continue
        for key, name in OTHERS.items():
            if other := r.get(key):
                r[f"byte_vs_{name}"] = round(byte["records_per_s"] / other["records_per_s"], 2)
                r[f"cpu_per_mb_byte_vs_{name}"] = round(
                    byte["cpu_s_per_mb"] / other["cpu_s_per_mb"], 3
                )
        if perf := r.get("consumer_performance"):
            r["byte_vs_consumer_performance"] = round(
                byte["records_per_s"] / perf["records_per_s"], 2
            )
        if "byte_vs_mirror" in r:
            past = MIRROR_VS_MM2_2026_11_22[case.split("-")[0]]
            r["byte_vs_mm2_expected"] = round(r["byte_vs_mirror"] * past, 2)
        print(f"{case}: {json.dumps({k: v for k, v in r.items() if 'vs' in k})}")


# --------------------------------------------------------------------- Produce probes


def encode_batch(
    deltas: list[int],
    *,
    attributes: int = 0,
    base_offset: int = 0,
    producer: tuple[int, int] = (-1, -1),
    lz4: bool = False,
    last_delta: int | None = None,
    created_before_ms: int = 0,
) -> bytes:
    """One magic-2 batch of len(deltas) records at those offset deltas (lastOffsetDelta
    the last of them unless given), optionally lz4-compressed as librdkafka frames it;
    the CRC is right. ``created_before_ms``: records created that long before the
    batch's maxTimestamp (as in a LogAppendTime topic's batches)."""
    now = int(time.time() * 1000)
    base_ts = now - created_before_ms
    body = bytearray()
    for i, delta in enumerate(deltas):
        value = b"probe-%d-%d" % (len(deltas), i)
        record = b"\x00" + _zigzag(0) + _zigzag(delta) + _zigzag(-1) + _zigzag(len(value))
        record += value + _zigzag(0)
        body += _zigzag(len(record)) + record
    if lz4:
        body = bytearray(lz4_frame(bytes(body)))
        attributes |= 3
    last = deltas[-1] if last_delta is None else last_delta
    seq = 0 if producer[0] >= 0 else -1
    after = struct.pack(
        ">hiqqqhii", attributes, last, base_ts, now, producer[0], producer[1], seq, len(deltas)
    )
    after += bytes(body)
    head = struct.pack(">qiib", base_offset, 9 + len(after), -1, 2)
    return head + struct.pack(">I", crc32c.crc32c(after)) + after


def lz4_frame(data: bytes) -> bytes:
    """An LZ4 frame with librdkafka's header (independent 64 KB blocks, no checksums)."""
    block = bytes(cramjam.lz4.compress_block(data, store_size=False))
    return LZ4_HEADER + struct.pack("<I", len(block)) + block + b"\0\0\0\0"


def _zigzag(value: int) -> bytes:
    zigzag, out = (value << 1) ^ (value >> 63), bytearray()
    while True:
        byte = zigzag & 0x7F
        zigzag >>= 7
        if not zigzag:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


PROBES: dict[str, dict[str, Any]] = {
    "baseline_ok": {},
    "baseline_lz4_hand_made_ok": {"lz4": True},
    "i_offset_delta_hole": {"deltas": [0, 1, 3]},
    "i_offset_delta_hole_lz4": {"deltas": [0, 1, 3], "lz4": True},
    "i_empty_batch_as_compaction_leaves": {"deltas": [], "last_delta": 2},
    "ii_base_offset_not_0": {"base_offset": 1000},
    "iii_transactional_bit_no_transaction": {"attributes": TRANSACTIONAL},
    "v_log_append_time_to_create_time_topic": {
        "attributes": TIMESTAMP_LOG_APPEND,
        "created_before_ms": 60_000,
    },
}


async def run_probes(source: ClusterConfig, target: ClusterConfig, admin: ClusterAdmin) -> dict:
    """Each batch produced, idempotently (a fresh producer id each), to a fresh
    CreateTime topic on ``target``; the broker's error code for each, and what the
    accepted ones left in the log."""
    topic = f"spike-probe-{uuid.uuid4().hex[:8]}"
    admin.create_topic(topic, 1)
    wait_ready(target, topic, 1)
    link = BrokerLink(*_address(target), "spike-probe", None)
    _, leaders = await topic_layout(link, topic)
    leader = BrokerLink(*leaders[0], "spike-probe", None)
    results: dict[str, Any] = {}
    try:
        for name, spec in PROBES.items():
            producer = await idempotent_producer(link)
            batch = encode_batch(spec.get("deltas", [0, 1, 2]), producer=producer, **_but(spec))
            results[name] = await probe(leader, topic, batch)
        producer = await idempotent_producer(link)
        results["iv_lz4_batch_from_source_rewritten"] = await probe(
            leader, topic, await source_lz4_batch(source, producer)
        )
        producer = await idempotent_producer(link)
        two = encode_batch([0, 1, 2], producer=producer)
        second = bytearray(encode_batch([0, 1, 2], producer=producer))
        _IDENTITY.pack_into(second, 43, producer[0], producer[1], 3)
        _CRC.pack_into(second, 17, crc32c.crc32c(bytes(second[21:])))
        results["vi_two_batches_one_partition"] = await probe(leader, topic, two + second)
        for name, r in results.items():
            print(f"probe {name}: {json.dumps(r)}", flush=True)
        results["log_after"] = describe_probe_topic(target, topic)
        print(f"probe topic after: {json.dumps(results['log_after'])}", flush=True)
    finally:
        link.close()
        leader.close()
    return results


def _but(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in spec.items() if k != "deltas"}


async def source_lz4_batch(source: ClusterConfig, producer: tuple[int, int]) -> bytes:
    """The first batch of the source's lz4 topic, rewritten as the byte copy does."""
    link = BrokerLink(*_address(source), "spike-probe", None)
    try:
        topic_id, _ = await topic_layout(link, "spike-100B-lz4")
        answer = await link.call(fetch_request(topic_id, [PartitionCopy(0, 1)], 64 * 1024))
    finally:
        link.close()
    records = answer.responses[0].partitions[0].records
    first = next(heads(records))
    (head, body, _), *_ = rewrite(records, [first], producer, 0)[0]
    return head + body


async def probe(link: BrokerLink, topic: str, batch: bytes) -> dict:
    answer = await link.call(
        ProduceRequest(
            transactional_id=None,
            acks=-1,
            timeout=dt.timedelta(seconds=10),
            topic_data=(
                TopicProduceData(
                    name=topic,
                    partition_data=(PartitionProduceData(index=0, records=Records(batch)),),
                ),
            ),
        )
    )
    reply = answer.responses[0].partition_responses[0]
    return {
        "error_code": int(reply.error_code.value),
        "error": reply.error_code.name,
        "error_message": reply.error_message,
        "record_errors": [
            (int(e.batch_index), e.batch_index_error_message) for e in reply.record_errors
        ],
        "base_offset": int(reply.base_offset),
    }


def describe_probe_topic(target: ClusterConfig, topic: str) -> list:
    """What the accepted probes left in the log: offset, value, timestamp (and its type)
    of each record, the first 12 (the source's lz4 batch comes last)."""
    consumer = Consumer({**target.as_librdkafka(), "group.id": "spike-probe-read"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    out = []
    try:
        for m in consumer.consume(12, 5.0):
            if m.error() is None:
                kind, ts = m.timestamp()
                out.append(
                    {
                        "offset": m.offset(),
                        "value": m.value()[:20].decode(),
                        "ts": ts,
                        "ts_type": {1: "CreateTime", 2: "LogAppendTime"}.get(kind, kind),
                    }
                )
    finally:
        consumer.close()
    return out


# --------------------------------------------------------------------- profile summary

# (category, test on a sample's frames): the first that matches names the sample.
# Frames are (function, file name, source line), leaf last.
PROFILE_CATEGORIES: list[tuple[str, Any]] = [
    ("waiting in epoll (idle)", lambda f: f[-1][0].endswith("select")),
    ("CRC-32C", lambda f: f[-1][0] == "rewrite" and "crc32c" in f[-1][2]),
    (
        "records copied into the request (kio path: header + records)",
        lambda f: "records=h + b" in f[-1][2],
    ),
    ("batch walk, filter, header rewrite", lambda f: _in(f, "rewrite", "committed", "heads")),
    ("kio decode of responses (Fetch, Produce)", lambda f: _in(f, "_decode")),
    ("kio encode of Produce requests", lambda f: _in(f, "_framed", "encode_request")),
    ("hand-encoded Produce framing (LeanLink)", lambda f: _in(f, "produce_frame")),
    ("socket recv + asyncio StreamReader buffering", lambda f: _in(f, "_read_ready", "read_frame")),
    (
        "socket send (with writelines' join)",
        lambda f: _in(f, "_SelectorSocketTransport.write", "_write_ready", "writelines"),
    ),
    ("asyncio task/future/loop machinery", lambda f: "/asyncio/" in f[-1][1]),
    ("the copier's own Python (requests, bookkeeping)", lambda f: True),
]


def _in(frames: list[tuple[str, str, str]], *names: str) -> bool:
    """Whether a frame is one of ``names`` (qualified, or the bare function name)."""
    return any(f[0] in names or f[0].rsplit(".", 1)[-1] in names for f in frames)


def summarise_profile(path: Path, anchor: str = "Runner.run") -> dict:
    """Where a py-spy ``--idle`` speedscope profile's time goes inside ``anchor`` (the
    byte copy's asyncio.run): share of wall time and of busy (non-idle) time."""
    import linecache

    data = json.loads(path.read_text())
    frames = data["shared"]["frames"]
    shares: dict[str, float] = {name: 0.0 for name, _ in PROFILE_CATEGORIES}
    for profile in data["profiles"]:
        for stack, weight in zip(profile["samples"], profile["weights"], strict=True):
            named = [
                (
                    frames[i]["name"],
                    frames[i].get("file", ""),
                    linecache.getline(frames[i].get("file", ""), frames[i].get("line") or 0),
                )
                for i in stack
            ]
            if any(f[0] == anchor for f in named):
                category = next(name for name, test in PROFILE_CATEGORIES if test(named))
                shares[category] += weight
    wall = sum(shares.values())
    busy = wall - shares["waiting in epoll (idle)"]
    return {
        "profile": str(path),
        "sampled_s": round(wall, 2),
        "share_of_wall": {k: round(v / wall, 3) for k, v in shares.items()},
        "share_of_busy": {
            k: round(v / busy, 3) for k, v in shares.items() if not k.startswith("waiting")
        },
    }


if __name__ == "__main__":
    sys.exit(main())

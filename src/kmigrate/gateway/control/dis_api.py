"""The DIS stream HTTP API, served by a gateway instance next to its Kafka endpoint
(``gateway start --http-listen``), through the same handlers Kafka clients use: routes,
virtual offsets, fences and shielding apply alike.

    POST /v2/{project_id}/records            put records (base64 data) into a stream
    GET  /v2/{project_id}/cursors            a partition cursor (AT_/AFTER_SEQUENCE_NUMBER,
                                             TRIM_HORIZON, LATEST, AT_TIMESTAMP)
    GET  /v2/{project_id}/records            records from a cursor, and the next cursor

Errors are JSON ``{"error_code": "DIS.xxxx", "error_msg": one line}``: 400 for a request
naming something wrong, 404 for an unknown stream, 503 when the partition's backend does
not answer now (retry).
"""

from __future__ import annotations

import base64
import binascii
import itertools
import time
import zlib
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Protocol

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from kio.schema.errors import ErrorCode
from kio.static.primitive import Records
from pydantic import BaseModel, ConfigDict, Field

from kmigrate.codec import records
from kmigrate.gateway.control import dis
from kmigrate.gateway.protocol.entities import build, item_type
from kmigrate.kafka.protocol.wire import Request as KafkaRequest
from kmigrate.kafka.protocol.wire import request_type

RETRIABLE = {
    ErrorCode.not_leader_or_follower,
    ErrorCode.leader_not_available,
    ErrorCode.request_timed_out,
    ErrorCode.unknown_server_error,
    ErrorCode.not_enough_replicas,
    ErrorCode.not_enough_replicas_after_append,
}
MAX_FETCH_BYTES = 1 << 20


class Handler(Protocol):
    """What the DIS API needs of a gateway instance (kmigrate.gateway.serving.dispatch)."""

    @property
    def versions(self) -> Mapping[int, tuple[int, int]]: ...

    async def handle(self, request: KafkaRequest) -> Any: ...

    async def partition_count(self, topic: str) -> int | None: ...


class Unavailable(Exception):
    """The partition's backend does not answer now (503, retry)."""


class NotFound(Exception):
    """An unknown stream or partition (404)."""


class PutRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")
    data: str
    partition_key: str | None = None
    partition_id: str | None = None


class PutRecords(BaseModel):
    model_config = ConfigDict(extra="ignore")
    stream_name: str = Field(min_length=1)
    records: list[PutRecord] = Field(min_length=1, max_length=10_000)


class Streams:
    """Stream operations as Kafka requests handled by one gateway instance."""

    def __init__(self, gateway: Handler) -> None:
        self.gateway = gateway
        self._ids = itertools.count(1)
        self._spread = itertools.count()

    def _version(self, api: int, highest: int) -> int:
        low, high = self.gateway.versions.get(api, (0, -1))
        if high < low:
            raise Unavailable("the gateway's backends do not answer yet")
        return min(high, highest)

    async def _call(self, api: int, version: int, body: Any) -> Any:
        request = KafkaRequest(api, version, next(self._ids), "kmigrate-dis", body)
        return await self.gateway.handle(request)

    async def partitions(self, stream: str) -> int:
        count = await self.gateway.partition_count(stream)
        if not count:
            raise NotFound(f"stream '{stream}' does not exist")
        return count

    async def choose(self, stream: str, record: PutRecord) -> int:
        count = await self.partitions(stream)
        if record.partition_id is not None:
            p = dis.parse_partition(record.partition_id)
            if p >= count:
                raise dis.BadRequest(f"stream '{stream}' has {count} partitions; no {p}")
            return p
        if record.partition_key is not None:
            return zlib.crc32(record.partition_key.encode()) % count
        return next(self._spread) % count

    async def put_records(self, body: PutRecords) -> dict[str, Any]:
        """Each record written (one batch per partition), or why not."""
        by_partition: dict[int, list[tuple[int, bytes | None, bytes]]] = {}
        for i, record in enumerate(body.records):
            try:
                value = base64.b64decode(record.data, validate=True)
            except (binascii.Error, ValueError):
                raise dis.BadRequest(f"record {i}: data is not base64") from None
            key = record.partition_key.encode() if record.partition_key is not None else None
            p = await self.choose(body.stream_name, record)
            by_partition.setdefault(p, []).append((i, key, value))
        answers: list[dict[str, Any]] = [{} for _ in body.records]
        failed = 0
        for p, chosen in by_partition.items():
            try:
                first = await self.put(body.stream_name, p, [(k, v) for _, k, v in chosen])
            except Unavailable as exc:
                failed += len(chosen)
                for i, _k, _v in chosen:
                    answers[i] = {"error_code": "DIS.5000", "error_message": str(exc)}
                continue
            for n, (i, _k, _v) in enumerate(chosen):
                answers[i] = {"partition_id": dis.shard_id(p), "sequence_number": str(first + n)}
        return {"failed_record_count": failed, "records": answers}

    async def put(
        self, stream: str, partition: int, values: list[tuple[bytes | None, bytes]]
    ) -> int:
        """The sequence number of the first of ``values``, written with acks=all."""
        version = self._version(0, 9)
        req = request_type(0, version)
        topic_type = item_type(req, "topic_data")
        data = build(
            item_type(topic_type, "partition_data"),
            index=partition,
            records=Records(records.encode_batch(values, int(time.time() * 1000))),
        )
        body = build(
            req,
            transactional_id=None,
            acks=-1,
            timeout=timedelta(seconds=30),
            topic_data=(build(topic_type, name=stream, partition_data=(data,)),),
        )
        answer = await self._call(0, version, body)
        reply = answer.responses[0].partition_responses[0]
        _check(reply.error_code, stream, partition)
        return int(reply.base_offset)

    async def start(
        self, stream: str, p: int, cursor_type: str, sequence: str | None, timestamp: int | None
    ) -> int:
        """The sequence number a new cursor of ``cursor_type`` starts at."""
        if p >= await self.partitions(stream):
            raise NotFound(f"stream '{stream}' has no partition {p}")
        try:
            kind = dis.CursorType(cursor_type)
        except ValueError:
            raise dis.BadRequest(
                f"cursor-type {cursor_type}: one of {', '.join(dis.CursorType)}"
            ) from None
        if kind is dis.CursorType.AT_TIMESTAMP:
            if timestamp is None or timestamp < 0:
                raise dis.BadRequest("AT_TIMESTAMP needs timestamp (milliseconds)")
            return await self.offset(stream, p, timestamp)
        if kind in (dis.CursorType.TRIM_HORIZON, dis.CursorType.LATEST):
            return await self.offset(stream, p, -2 if kind is dis.CursorType.TRIM_HORIZON else -1)
        if sequence is None or not sequence.isdigit():
            raise dis.BadRequest(f"{kind} needs starting-sequence-number (a number)")
        offset = int(sequence) + (kind is dis.CursorType.AFTER_SEQUENCE_NUMBER)
        low, high = await self.offset(stream, p, -2), await self.offset(stream, p, -1)
        if not low <= offset <= high:
            raise dis.BadRequest(
                f"sequence number {sequence} of {stream}[{p}] is out of range ({low}-{high - 1})"
            )
        return offset

    async def offset(self, stream: str, partition: int, timestamp: int) -> int:
        """ListOffsets: -2 earliest, -1 latest, else the first at or after ``timestamp``
        (the latest when none is)."""
        version = self._version(2, 7)
        req = request_type(2, version)
        topic_type = item_type(req, "topics")
        item = build(item_type(topic_type, "partitions"), partition_index=partition,
                     timestamp=timestamp, current_leader_epoch=-1, max_num_offsets=1)  # fmt: skip
        body = build(req, replica_id=-1, isolation_level=0,
                     topics=(build(topic_type, name=stream, partitions=(item,)),))  # fmt: skip
        answer = await self._call(2, version, body)
        reply = answer.topics[0].partitions[0]
        _check(reply.error_code, stream, partition)
        offset = int(reply.offset)
        if offset >= 0 or timestamp == -1:
            return max(offset, 0)
        return await self.offset(stream, partition, -1)  # no record that late: the end

    async def read(
        self, stream: str, partition: int, offset: int, max_bytes: int
    ) -> tuple[list[records.Record], int]:
        """Records from ``offset`` on, and the partition's high watermark."""
        version = self._version(1, 12)
        req = request_type(1, version)
        topic_type = item_type(req, "topics")
        item = build(item_type(topic_type, "partitions"), partition=partition,
                     fetch_offset=offset, partition_max_bytes=max_bytes,
                     current_leader_epoch=-1, log_start_offset=-1)  # fmt: skip
        body = build(req, replica_id=-1, max_wait=timedelta(milliseconds=100), min_bytes=1,
                     max_bytes=max_bytes, isolation_level=0, session_id=0, session_epoch=-1,
                     topics=(build(topic_type, topic=stream, partitions=(item,)),),
                     forgotten_topics_data=(), rack_id="")  # fmt: skip
        answer = await self._call(1, version, body)
        reply = answer.responses[0].partitions[0]
        if reply.error_code == ErrorCode.offset_out_of_range:
            raise dis.BadRequest(
                f"sequence number {offset} of {stream}[{partition}] is out of range"
            )
        _check(reply.error_code, stream, partition)
        found = [r for r in records.decode(bytes(reply.records or b"")) if r.offset >= offset]
        return found, int(reply.high_watermark)


def _check(code: ErrorCode, stream: str, partition: int) -> None:
    if code == ErrorCode.none:
        return
    if code == ErrorCode.unknown_topic_or_partition:
        raise NotFound(f"stream '{stream}' has no partition {partition}")
    if code in RETRIABLE:
        raise Unavailable(f"{stream}[{partition}] is not available now ({code.name}); retry")
    raise dis.BadRequest(f"{stream}[{partition}]: {code.name}")


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error_code": code, "error_msg": message}, status_code=status)


def create_app(gateway: Handler, secret: bytes) -> FastAPI:
    app = FastAPI(title="kmigrate gateway: DIS stream API", docs_url=None, redoc_url=None)
    streams = Streams(gateway)

    @app.exception_handler(dis.BadRequest)
    async def bad(_r: Request, exc: dis.BadRequest) -> JSONResponse:
        return _error(400, "DIS.4200", str(exc))

    @app.exception_handler(NotFound)
    async def missing(_r: Request, exc: NotFound) -> JSONResponse:
        return _error(404, "DIS.4301", str(exc))

    @app.exception_handler(Unavailable)
    async def unavailable(_r: Request, exc: Unavailable) -> JSONResponse:
        return _error(503, "DIS.5000", str(exc))

    @app.exception_handler(RequestValidationError)
    async def malformed(_r: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "malformed request"}
        where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("body", "query"))
        return _error(400, "DIS.4200", f"{where or 'request'}: {first.get('msg')}")

    @app.exception_handler(records.RecordsError)
    async def unreadable(_r: Request, exc: records.RecordsError) -> JSONResponse:
        return _error(422, "DIS.4225", str(exc))

    @app.post("/v2/{project_id}/records")
    async def put_records(project_id: str, body: PutRecords) -> dict[str, Any]:
        del project_id  # one gateway, one project
        return await streams.put_records(body)

    @app.get("/v2/{project_id}/cursors")
    async def cursor(
        project_id: str,
        stream_name: str = Query(alias="stream-name"),
        partition_id: str = Query(alias="partition-id"),
        cursor_type: str = Query(default="TRIM_HORIZON", alias="cursor-type"),
        starting_sequence_number: str | None = Query(
            default=None, alias="starting-sequence-number"
        ),
        timestamp: int | None = Query(default=None),
    ) -> dict[str, str]:
        del project_id
        p = dis.parse_partition(partition_id)
        offset = await streams.start(
            stream_name, p, cursor_type, starting_sequence_number, timestamp
        )
        return {"partition_cursor": dis.sign(dis.Cursor(stream_name, p, offset), secret)}

    @app.get("/v2/{project_id}/records")
    async def get_records(
        project_id: str,
        partition_cursor: str = Query(alias="partition-cursor"),
        max_fetch_bytes: int = Query(default=MAX_FETCH_BYTES, ge=1, le=64 * MAX_FETCH_BYTES),
    ) -> dict[str, Any]:
        del project_id
        at = dis.verify(partition_cursor, secret)
        found, _high = await streams.read(at.stream, at.partition, at.offset, max_fetch_bytes)
        following = found[-1].offset + 1 if found else at.offset
        return {
            "records": [
                {
                    "partition_key": r.key.decode(errors="replace") if r.key is not None else None,
                    "sequence_number": str(r.offset),
                    "data": base64.b64encode(r.value or b"").decode(),
                    "timestamp": r.timestamp_ms,
                    "timestamp_type": "CreateTime",
                }
                for r in found
            ],
            "next_partition_cursor": dis.sign(
                dis.Cursor(at.stream, at.partition, following), secret
            ),
        }

    return app

"""Kafka's wire format: size-prefixed frames, request and response headers, and the
message bodies, encoded and decoded with kio (generated from Kafka's own message
schemas). Record batches inside Produce and Fetch stay bytes.

Pure: bytes in, values out; a frame that cannot be read is a ``FrameError``.
"""

from __future__ import annotations

import asyncio
import io
import struct
from dataclasses import dataclass
from functools import cache
from typing import Any

from kio.index import UnknownAPIKey, UnknownEntity, load_request_schema, load_response_schema
from kio.schema.index import api_key_map, schema_name_map
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError
from kio.static.primitive import i32

MAX_FRAME_BYTES = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default
_SIZE = struct.Struct(">i")
_KEY_VERSION = struct.Struct(">hh")


class FrameError(Exception):
    """A frame that is not a Kafka message this side understands (malformed, too large,
    an unknown API or version): the connection is closed."""


@dataclass(frozen=True)
class Request:
    api_key: int
    version: int
    correlation_id: int
    client_id: str | None
    body: Any  # a kio request entity


def api_name(api_key: int) -> str:
    return api_key_map.get(api_key, f"api {api_key}")


@cache
def known_versions(api_key: int) -> tuple[int, int] | None:
    """The (min, max) versions kio can encode for ``api_key``; None when unknown."""
    name = api_key_map.get(api_key)
    if name is None:
        return None
    versions = sorted(schema_name_map[name])
    return versions[0], versions[-1]


async def read_frame(reader: asyncio.StreamReader, limit: int = MAX_FRAME_BYTES) -> bytes | None:
    """The next frame's bytes (without the size), or None when the peer closed."""
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise FrameError("the connection closed in the middle of a frame's size") from None
        return None
    (size,) = _SIZE.unpack(head)
    if size < 8 or size > limit:
        raise FrameError(f"a frame of {size} bytes (allowed: 8 to {limit})")
    try:
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        raise FrameError(f"the connection closed in the middle of a {size}-byte frame") from None


def peek_key_version(frame: bytes) -> tuple[int, int]:
    api_key, version = _KEY_VERSION.unpack_from(frame)
    return int(api_key), int(version)


def decode_request(frame: bytes) -> Request:
    api_key, version = peek_key_version(frame)
    header, body = _decode(frame, _request_type(api_key, version), "request")
    return Request(api_key, version, header.correlation_id, header.client_id, body)


def encode_response(correlation_id: int, body: Any) -> bytes:
    header_type = type(body).__header_schema__
    header = (
        ResponseHeaderV1(correlation_id=i32(correlation_id))
        if header_type is ResponseHeaderV1
        else ResponseHeaderV0(correlation_id=i32(correlation_id))
    )
    return _framed(header, body)


def encode_request(body: Any, correlation_id: int, client_id: str) -> bytes:
    header_type = type(body).__header_schema__
    values = {
        "request_api_key": type(body).__api_key__,
        "request_api_version": type(body).__version__,
        "correlation_id": correlation_id,
        "client_id": client_id,
    }
    header = (
        RequestHeaderV2(**values) if header_type is RequestHeaderV2 else RequestHeaderV1(**values)
    )
    return _framed(header, body)


def decode_response(frame: bytes, api_key: int, version: int) -> tuple[int, Any]:
    """(correlation id, body) of a response to an ``api_key`` v``version`` request."""
    header, body = _decode(frame, response_type(api_key, version), "response")
    return header.correlation_id, body


def _decode(frame: bytes, body_type: Any, what: str) -> tuple[Any, Any]:
    """Header and body; bytes after the body are ignored, as Kafka's brokers do
    (librdkafka 2.16 sends three after an all-topics Metadata v12 request)."""
    try:
        header, used = entity_reader(body_type.__header_schema__)(frame, 0)
        body, _ = entity_reader(body_type)(frame, used)
    except (SerialError, ValueError, UnicodeDecodeError, struct.error) as exc:
        name = f"{api_name(body_type.__api_key__)} v{body_type.__version__}"
        raise FrameError(f"a malformed {name} {what}: {exc}") from None
    return header, body


def correlation_of(frame: bytes) -> int:
    return int(_SIZE.unpack_from(frame)[0])


@cache  # kio finds a schema by module name on every call: 5-15 µs, on every request
def request_type(api_key: int, version: int) -> Any:
    return _request_type(api_key, version)


@cache
def response_type(api_key: int, version: int) -> Any:
    try:
        return load_response_schema(api_key, version)
    except (UnknownAPIKey, UnknownEntity):
        raise FrameError(f"no {api_name(api_key)} v{version} response is known") from None


def _request_type(api_key: int, version: int) -> Any:
    try:
        return load_request_schema(api_key, version)
    except (UnknownAPIKey, UnknownEntity):
        raise FrameError(f"an unsupported request: {api_name(api_key)} v{version}") from None


def _framed(header: Any, body: Any) -> bytes:
    buffer = io.BytesIO()
    buffer.write(b"\0\0\0\0")
    entity_writer(type(header))(buffer, header)
    entity_writer(type(body))(buffer, body)
    data = buffer.getbuffer()
    _SIZE.pack_into(data, 0, len(data) - 4)
    return bytes(data)

"""The gateway's wire format, SASL client and request splitting (pure: no broker)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.list_offsets.v7 import request as lo_req
from kio.schema.list_offsets.v7 import response as lo_resp

from kmigrate.codec.sasl import SaslClient
from kmigrate.errors import AuthenticationError
from kmigrate.gateway.protocol.entities import NO_THROTTLE
from kmigrate.gateway.serving import split
from kmigrate.kafka.protocol import wire


def _list_offsets(*topics: tuple[str, list[int]]) -> Any:
    return lo_req.ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=tuple(
            lo_req.ListOffsetsTopic(
                name=name,
                partitions=tuple(
                    lo_req.ListOffsetsPartition(partition_index=p, timestamp=-1) for p in parts
                ),
            )
            for name, parts in topics
        ),
    )


def test_a_request_reads_back_and_a_response_frame_carries_its_correlation_id() -> None:
    body = _list_offsets(("t", [0, 1]))
    frame = wire.encode_request(body, 42, "client-1")
    request = wire.decode_request(frame[4:])
    assert (request.api_key, request.version, request.correlation_id) == (2, 7, 42)
    assert request.client_id == "client-1" and request.body == body
    reply = lo_resp.ListOffsetsResponse(throttle_time=NO_THROTTLE, topics=())
    data = wire.encode_response(42, reply)
    assert int.from_bytes(data[:4], "big") == len(data) - 4
    assert wire.decode_response(data[4:], 2, 7) == (42, reply)


@pytest.mark.parametrize(
    ("frame", "says"),
    [
        (b"\x00\x02\x00\x07\x00\x00\x00\x01", "malformed list_offsets v7"),
        (b"\x7f\x00\x00\x00\x00\x00\x00\x01\x00\x00", "unsupported request"),
        (b"\x00\x02\x00\x63\x00\x00\x00\x01\x00\x00", "unsupported request: list_offsets v99"),
    ],
)
def test_a_malformed_frame_is_a_frame_error(frame: bytes, says: str) -> None:
    with pytest.raises(wire.FrameError, match=says):
        wire.decode_request(frame)


def test_frames_too_large_or_cut_short_are_refused() -> None:
    async def read(data: bytes, limit: int = 1000) -> bytes | None:
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        return await wire.read_frame(reader, limit)

    assert asyncio.run(read(b"")) is None
    assert asyncio.run(read(b"\x00\x00\x00\x08" + b"x" * 8)) == b"x" * 8
    with pytest.raises(wire.FrameError, match="a frame of 5000 bytes"):
        asyncio.run(read(b"\x00\x00\x13\x88"))
    with pytest.raises(wire.FrameError, match="in the middle of a 9-byte frame"):
        asyncio.run(read(b"\x00\x00\x00\x09abc"))


def test_scram_sha_256_matches_rfc_7677() -> None:
    client = SaslClient("SCRAM-SHA-256", "user", "pencil", _nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    final = client.answer(
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    assert final == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    client.check_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    with pytest.raises(AuthenticationError, match="signature does not match"):
        client.check_final(b"v=AAAA")
    assert "pencil" not in repr(client)


def test_a_split_request_merges_back_in_the_clients_order() -> None:
    """Partitions on two brokers and one with no route: each answered on its own, a
    broker that fails gives retriable errors for its partitions only."""
    sent: dict[tuple[str, int], Any] = {}

    def place(topic: str, item: Any) -> split.Target | ErrorCode:
        if topic == "nowhere":
            return ErrorCode.unknown_topic_or_partition
        return ("a", 1) if item.partition_index % 2 == 0 else ("b", 7)

    async def send(target: split.Target, body: Any) -> Any:
        sent[target] = body
        if target == ("b", 7):
            raise ConnectionError("broker 7 went away")
        return lo_resp.ListOffsetsResponse(
            throttle_time=NO_THROTTLE,
            topics=tuple(
                lo_resp.ListOffsetsTopicResponse(
                    name=t.name,
                    partitions=tuple(
                        lo_resp.ListOffsetsPartitionResponse(
                            partition_index=p.partition_index,
                            error_code=ErrorCode.none,
                            offset=100 + p.partition_index,
                        )
                        for p in reversed(t.partitions)  # any order back
                    ),
                )
                for t in reversed(body.topics)
            ),
        )

    request = _list_offsets(("t", [3, 0, 1, 2]), ("nowhere", [0]), ("u", [4]))
    answer = asyncio.run(
        split.split_call(
            split.LIST_OFFSETS,
            request,
            place,
            send,
            on_failure=lambda _t, _e: ErrorCode.not_leader_or_follower,
        )
    )
    assert [[p.partition_index for p in t.partitions] for t in sent[("a", 1)].topics] == [
        [0, 2],
        [4],
    ]
    got = [
        (t.name, p.partition_index, p.error_code.name, p.offset)
        for t in answer.topics
        for p in t.partitions
    ]
    assert got == [
        ("t", 3, "not_leader_or_follower", -1),
        ("t", 0, "none", 100),
        ("t", 1, "not_leader_or_follower", -1),
        ("t", 2, "none", 102),
        ("nowhere", 0, "unknown_topic_or_partition", -1),
        ("u", 4, "none", 104),
    ]

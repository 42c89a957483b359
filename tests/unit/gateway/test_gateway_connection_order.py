"""A client connection's group and transaction coordinator requests are handled in the
order the client sent them, as a Kafka broker handles a connection's requests: a slow
one is not overtaken by the next (an asynchronous offset commit and then a synchronous
one reach the group home in that order)."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.heartbeat.v4.response import HeartbeatResponse
from kio.static.primitive import i32, i32Timedelta

from kmigrate.gateway.serving.server import Connection
from kmigrate.kafka.protocol import wire


class _Timings:
    def record(self, _name: str, _seconds: float) -> None:
        pass


class _Gateway:
    """Answers heartbeats; the first one waits for the second to start (at most
    ``WAIT_S``), as a slow backend would; ``order`` is the order they were handled."""

    WAIT_S = 0.5

    def __init__(self) -> None:
        self.order: list[int] = []
        self.second_started = asyncio.Event()
        self.timings = _Timings()

    def supports(self, _api_key: int, _version: int) -> bool:
        return True

    async def handle(self, request: wire.Request, _guard: Any = None) -> Any:
        generation = int(request.body.generation_id)
        if generation == 1:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.second_started.wait(), self.WAIT_S)
        else:
            self.second_started.set()
        self.order.append(generation)
        no_throttle = i32Timedelta.parse(timedelta(0))
        return HeartbeatResponse(throttle_time=no_throttle, error_code=ErrorCode.none)


def _heartbeat(generation: int) -> bytes:
    body = HeartbeatRequest(group_id="g", generation_id=i32(generation), member_id="m")
    return wire.encode_request(body, generation, "client")


async def _two_heartbeats() -> tuple[list[int], list[int]]:
    gateway = _Gateway()
    server = await asyncio.start_server(
        lambda r, w: Connection(gateway, r, w).serve(),
        "127.0.0.1",
        0,  # type: ignore[arg-type]
    )
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(_heartbeat(1) + _heartbeat(2))  # pipelined, as clients do
    await writer.drain()
    answered = []
    for _ in range(2):
        frame = await asyncio.wait_for(wire.read_frame(reader), 5)
        assert frame is not None
        answered.append(int.from_bytes(frame[:4], "big"))  # the correlation id
    writer.close()
    server.close()
    await server.wait_closed()
    return gateway.order, answered


def test_a_slow_coordinator_request_is_not_overtaken_by_the_next_on_its_connection() -> None:
    handled, answered = asyncio.run(_two_heartbeats())
    assert handled == [1, 2]
    assert answered == [1, 2]

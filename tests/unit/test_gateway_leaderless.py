"""The gateway asks its backend again before answering Metadata for a partition it
knows no leader of (created a moment ago): one answer, not a client's retry; at most
once a second per backend, whether or not the backend answered. After a routing change
it answers only once the backend's metadata it asked for has come back."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from kmigrate.config import ClusterConfig
from kmigrate.gateway.control.placement import Instance
from kmigrate.gateway.protocol import wire
from kmigrate.gateway.protocol.backend import Backend, ClusterView, Leader
from kmigrate.gateway.serving.metadata import metadata
from kmigrate.gateway.serving.state import State


def _state(leaders: dict[int, int]) -> State:
    backend = Backend(ClusterConfig(name="home", bootstrap_servers="127.0.0.1:1"), "test")
    backend.view = ClusterView(
        brokers={1: ("127.0.0.1", 1)},
        partitions={"t": 3},
        leaders={("t", p): Leader(broker, 0, 0) for p, broker in leaders.items()},
    )
    state = State("gw", Instance(1, "127.0.0.1", 9092), {"home": backend}, "home")
    state.routes = state.routes.with_route("t", "home")
    return state


def test_a_partition_without_a_leader_is_asked_about_again() -> None:
    assert _state({0: 1, 1: 1}).leaderless(["t"]) == {"home"}  # partition 2 unknown
    assert _state({0: 1, 1: 1, 2: -1}).leaderless(["t"]) == {"home"}  # no leader


def test_at_most_once_a_second_per_backend_and_never_when_all_are_known() -> None:
    state = _state({0: 1})
    assert state.leaderless(["t"]) == {"home"}
    assert state.leaderless(["t"]) == set()  # asked a moment ago, answered or not
    assert state.leaderless(["t"], every_s=0) == {"home"}
    assert _state({0: 1, 1: 1, 2: 1}).leaderless(["t"]) == set()
    assert _state({0: 1}).leaderless(["not-routed"]) == set()


def test_metadata_waits_for_the_refresh_another_instances_routing_change_started() -> None:
    """Partitions added through another instance bump the routing table; this instance
    learns the new count from its backend in the background, and a Metadata request
    that arrives meanwhile waits for it instead of answering the old count."""
    state = _state({0: 1, 1: 1, 2: 1})
    backend = state.backends["home"]

    async def grown() -> None:
        await asyncio.sleep(0.05)  # the backend answers a moment later
        backend.view = replace(
            backend.view,
            partitions={"t": 5},
            leaders={("t", p): Leader(1, 0, 0) for p in range(5)},
        )

    backend.refresh = grown  # type: ignore[method-assign]
    every_topic = wire.request_type(3, 12)(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )

    async def answer_after_a_change() -> list[int]:
        state.follow(replace(state.routes, version=state.routes.version + 1))
        reply = await metadata(state, every_topic)
        return [len(t.partitions) for t in reply.topics]

    assert asyncio.run(answer_after_a_change()) == [5]

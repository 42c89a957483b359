"""The gateway asks its backend again before answering Metadata for a partition it
knows no leader of (created a moment ago): one answer, not a client's retry; at most
once a second per backend, whether or not the backend answered."""

from __future__ import annotations

from kmigrate.config import ClusterConfig
from kmigrate.gateway.control.placement import Instance
from kmigrate.gateway.protocol.backend import Backend, ClusterView, Leader
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

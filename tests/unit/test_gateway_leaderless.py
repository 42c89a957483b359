"""The gateway asks its backend again before answering Metadata for a partition it
knows no leader of (created a moment ago): one answer, not a client's retry."""

from __future__ import annotations

import time

from kmigrate.config import ClusterConfig
from kmigrate.gateway.control.placement import Instance
from kmigrate.gateway.protocol.backend import Backend, ClusterView, Leader
from kmigrate.gateway.serving.state import State


def _state(leaders: dict[int, int], learned_ago_s: float) -> State:
    backend = Backend(ClusterConfig(name="home", bootstrap_servers="127.0.0.1:1"), "test")
    backend.view = ClusterView(
        brokers={1: ("127.0.0.1", 1)},
        partitions={"t": 3},
        leaders={("t", p): Leader(broker, 0, 0) for p, broker in leaders.items()},
        learned_at=time.monotonic() - learned_ago_s,
    )
    state = State("gw", Instance(1, "127.0.0.1", 9092), {"home": backend}, "home")
    state.routes = state.routes.with_route("t", "home")
    return state


def test_a_partition_without_a_leader_is_asked_about_again() -> None:
    assert _state({0: 1, 1: 1}, learned_ago_s=5).leaderless(["t"])  # partition 2 unknown
    assert _state({0: 1, 1: 1, 2: -1}, learned_ago_s=5).leaderless(["t"])  # no leader


def test_every_leader_known_or_just_asked_means_no_new_question() -> None:
    assert not _state({0: 1, 1: 1, 2: 1}, learned_ago_s=5).leaderless(["t"])
    assert not _state({0: 1}, learned_ago_s=0).leaderless(["t"])  # at most once a second
    assert not _state({0: 1}, learned_ago_s=5).leaderless(["not-routed"])

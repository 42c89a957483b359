"""Replication throttles for the replicas that move, and only those (pure).

Kafka throttles replication where two things meet: a rate on the broker
(``leader.replication.throttled.rate`` / ``follower.replication.throttled.rate``, set per
broker id) and the topic's list of throttled replicas
(``leader.replication.throttled.replicas`` for the replicas that serve the copy,
``follower.replication.throttled.replicas`` for the new ones, as ``partition:broker``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kmigrate.errors import ConfigError
from kmigrate.reassign.planner import Move

LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
MIN_AUTO_RATE = 10 * 1024 * 1024  # bytes/s
AUTO_HEADROOM = 4  # the move copies this many times faster than producers write


@dataclass(frozen=True)
class Throttles:
    topics: dict[str, dict[str, str]]  # topic -> its two replica lists
    brokers: dict[int, int]  # broker -> rate (bytes/s) for both directions


def throttles_for(moves: Iterable[Move], rate: int) -> Throttles:
    leaders: dict[str, list[str]] = {}
    followers: dict[str, list[str]] = {}
    brokers: set[int] = set()
    for m in moves:
        leaders.setdefault(m.topic, []).extend(f"{m.partition}:{b}" for b in m.before)
        followers.setdefault(m.topic, []).extend(f"{m.partition}:{b}" for b in m.added)
        brokers.update(m.before)
        brokers.update(m.added)
    topics = {
        topic: {
            LEADER_REPLICAS: ",".join(sorted(set(leaders[topic]))),
            FOLLOWER_REPLICAS: ",".join(sorted(set(followers.get(topic, [])))),
        }
        for topic in leaders
    }
    return Throttles(topics, dict.fromkeys(sorted(brokers), rate))


def auto_rate(produce_bytes_per_s: float) -> int:
    """A rate that finishes the move (well above what producers add to the moving
    partitions) without starving them: AUTO_HEADROOM times their rate, at least
    MIN_AUTO_RATE."""
    return max(MIN_AUTO_RATE, int(AUTO_HEADROOM * produce_bytes_per_s))


def parse_rate(value: str) -> int | None:
    """'50MB' / '512KB' / '1048576' -> bytes/s; 'auto' -> None; anything else (or not
    above 0) is one line naming --throttle."""
    text = value.strip().upper().removesuffix("/S")
    if text == "AUTO":
        return None
    units = {"KB": 1024, "MB": 1024**2, "GB": 1024**3, "B": 1}
    factor = next((f for suffix, f in units.items() if text.endswith(suffix)), 1)
    number = next((text.removesuffix(s) for s in units if text.endswith(s)), text)
    try:
        rate = int(float(number) * factor)
    except (ValueError, OverflowError):  # not a number, nan, inf
        rate = 0
    if rate <= 0:
        raise ConfigError(
            f"--throttle {value!r}: give a rate per broker such as 50MB, 512KB or auto"
        )
    return rate

"""A replica reassignment kmigrate applied, as the store keeps it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Applied:
    """The reassignment applied on one cluster: its plan, pace and the throttles it set."""

    cluster: str
    plan_json: str
    state: str
    rate: int
    max_moves: int
    throttled_topics: tuple[str, ...]
    throttled_brokers: tuple[int, ...]
    started_ms: int

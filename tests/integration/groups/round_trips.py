"""Counting what kmigrate asks Kafka's admin API, on the real clients (nothing mocked).

Every admin client kmigrate makes is wrapped: each method call is counted, and each
future it returns records when it is awaited. A *wave* is a run of requests put in
flight before kmigrate waits for an answer: the number of waves is the number of
round trips kmigrate waits through one after the other, whatever the number of
requests in each. Calls made by the connection's child process (``isolated``:
OffsetFetch) are counted as one call and one wave each.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from kmigrate.kafka.admin import connection
from kmigrate.kafka.admin.isolated import Isolated


class RoundTrips:
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.waves = 0
        self._answered = True  # the next call starts a new wave

    def call(self, name: str) -> None:
        self.calls[name] += 1
        if self._answered:
            self.waves += 1
            self._answered = False

    def waited(self) -> None:
        self._answered = True


class _CountedFuture:
    def __init__(self, future: Any, trips: RoundTrips) -> None:
        self._future, self._trips = future, trips

    def result(self, *args: Any, **kwargs: Any) -> Any:
        self._trips.waited()
        return self._future.result(*args, **kwargs)


class _CountedClient:
    """The real AdminClient, counting its calls (``poll`` only serves callbacks)."""

    def __init__(self, client: Any, trips: RoundTrips) -> None:
        self._client, self._trips = client, trips

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr) or name == "poll":
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self._trips.call(name)
            answer = attr(*args, **kwargs)
            if isinstance(answer, dict):
                return {k: _CountedFuture(f, self._trips) for k, f in answer.items()}
            if hasattr(answer, "result"):
                return _CountedFuture(answer, self._trips)
            self._trips.waited()  # a blocking call (metadata)
            return answer

        return counted


@contextmanager
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[RoundTrips]:
    """Count the admin requests of every ClusterAdmin made inside the block."""
    trips = RoundTrips()
    make_client, isolated_call = connection.admin_client, Isolated.call

    def counted_client(*args: Any, **kwargs: Any) -> Any:
        return _CountedClient(make_client(*args, **kwargs), trips)

    def counted_isolated(self: Isolated, name: str, *args: Any, **kwargs: Any) -> Any:
        trips.call(f"isolated {name}")
        try:
            return isolated_call(self, name, *args, **kwargs)
        finally:
            trips.waited()

    with monkeypatch.context() as patch:
        patch.setattr(connection, "admin_client", counted_client)
        patch.setattr(Isolated, "call", counted_isolated)
        yield trips

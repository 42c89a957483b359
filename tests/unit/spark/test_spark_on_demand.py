"""spark.session.OnDemand starts its context once, at the first call, and stops only
what it started; is_local tells a local master from a cluster's."""

from __future__ import annotations

from typing import Any

from kmigrate.spark.session import OnDemand, is_local


class _Context:
    stopped = 0

    def stop(self) -> None:
        self.stopped += 1


def test_starts_at_the_first_call_once_and_stops_what_it_started() -> None:
    made: list[_Context] = []

    def factory() -> Any:
        made.append(_Context())
        return made[-1]

    spark = OnDemand(factory)
    assert not spark.started and made == []
    spark.stop()  # nothing started: nothing to stop
    assert spark() is spark() is made[0] and len(made) == 1 and spark.started
    spark.stop()
    assert made[0].stopped == 1 and not spark.started


def test_local_masters_are_local_and_cluster_masters_are_not() -> None:
    assert all(is_local(m) for m in ("local", "local[2]", "local[*]", "local[4,1]"))
    assert not any(
        is_local(m)
        for m in ("spark://h:7077", "yarn", "k8s://https://h", "local-cluster[2,1,1024]")
    )

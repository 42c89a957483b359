"""A revert leaves a controller epoch the next ZooKeeper-mode controller can lead with
(KAFKA-20488): its epoch, `/controller_epoch` plus one, must exceed the KRaft
controller's, which the partition states it wrote carry."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kmigrate.kraft.world import lifted_epoch


@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_the_next_controller_always_leads_above_the_kraft_epoch(zk: int, kraft: int) -> None:
    lifted = lifted_epoch(zk, kraft)
    stored = zk if lifted is None else lifted
    assert stored + 1 > kraft
    assert stored >= zk  # an epoch never goes down


def test_nothing_changes_when_the_zookeeper_epoch_is_ahead_already() -> None:
    assert lifted_epoch(7, 5) is None
    assert lifted_epoch(5, 5) is None
    assert lifted_epoch(2, 41) == 41


def test_no_kraft_epoch_known_changes_nothing() -> None:
    assert lifted_epoch(2, None) is None
    assert lifted_epoch(2, "41") is None

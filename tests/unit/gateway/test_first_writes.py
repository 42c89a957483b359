"""Where an idempotent producer's sequence may start on a backend (the gateway's answer to
a broker that takes any first sequence from a producer it does not know)."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from kmigrate.gateway.serving.first_writes import (
    GIVE_UP_S,
    SEQUENCE_LIMIT,
    FirstWrites,
    Verdict,
    next_sequence,
)

KEY = ("target", "orders", 0, 7, 0)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def run(step):  # type: ignore[no-untyped-def]
    return asyncio.run(step())


def test_only_the_expected_sequence_opens_a_producer_new_to_the_backend() -> None:
    async def step() -> None:
        first = FirstWrites()
        assert first.decide(KEY, 5, 0) is Verdict.ASK  # a later batch: ask the backend
        assert first.decide(KEY, 0, 0) is Verdict.OPEN
        first.done(KEY, written=True)
        assert first.decide(KEY, 5, 0) is Verdict.PASS  # the backend checks from now on

    run(step)


def test_a_later_batch_waits_for_the_first_write_and_follows_its_fate() -> None:
    async def step() -> None:
        first = FirstWrites()
        assert first.decide(KEY, 0, 0) is Verdict.OPEN
        waiting = asyncio.create_task(first.settled([KEY]))
        await asyncio.sleep(0)
        assert not waiting.done()
        first.done(KEY, written=False)  # refused: the client sends it again
        await waiting
        assert first.decide(KEY, 5, 0) is Verdict.ASK
        assert first.told(KEY, backend_knows=False) is Verdict.REFUSE
        assert first.decide(KEY, 0, 0) is Verdict.OPEN  # the retry of the first batch

    run(step)


def test_a_producer_the_backend_knows_passes_and_one_it_forgot_passes_after_a_while() -> None:
    async def step() -> None:
        clock = Clock()
        first = FirstWrites(clock)
        assert first.told(KEY, backend_knows=True) is Verdict.PASS
        other = ("target", "orders", 1, 7, 0)
        assert first.decide(other, 900, 0) is Verdict.ASK
        assert first.told(other, backend_knows=False) is Verdict.REFUSE
        clock.now += GIVE_UP_S - 1
        assert first.told(other, backend_knows=False) is Verdict.REFUSE
        clock.now += 2  # no earlier batch came: its state expired on the backend
        assert first.told(other, backend_knows=False) is Verdict.OPEN

    run(step)


@given(st.one_of(st.none(), st.integers(min_value=0, max_value=SEQUENCE_LIMIT - 1)))
def test_the_next_sequence_wraps_like_kafkas(last: int | None) -> None:
    following = next_sequence(last)
    assert 0 <= following < SEQUENCE_LIMIT
    assert following == (0 if last is None or last == SEQUENCE_LIMIT - 1 else last + 1)

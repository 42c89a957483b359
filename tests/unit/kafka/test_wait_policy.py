"""The one retry policy: which Kafka conditions are waited out, how long, what is said."""

from __future__ import annotations

import random

import pytest
from confluent_kafka import KafkaError
from hypothesis import given
from hypothesis import strategies as st

from kmigrate.durations import duration_text, parse_duration
from kmigrate.errors import (
    AuthorizationError,
    ClusterUnavailableError,
    ClusterUnreachableError,
    KafkaOperationError,
    OutageTooLongError,
    TopicNotFoundError,
)
from kmigrate.kafka.retry import condition_of, is_transient
from kmigrate.waiting import Backoff, Outage, WaitAbandoned, WaitPolicy


@pytest.mark.parametrize(
    "code",
    [
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.FENCED_LEADER_EPOCH,  # "Leader epoch is older than broker epoch"
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TRANSPORT,  # connection refused while a broker restarts
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._NOENT,  # ListOffsets: "Failed to query partition leaders: No leaders found"
        KafkaError.NOT_ENOUGH_REPLICAS,
    ],
)
def test_conditions_that_pass_on_their_own_are_transient(code: int) -> None:
    assert is_transient(KafkaError(code))


@pytest.mark.parametrize(
    "code",
    [
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.SASL_AUTHENTICATION_FAILED,
        KafkaError.MSG_SIZE_TOO_LARGE,  # a record too large for the target
        KafkaError.UNKNOWN_TOPIC_OR_PART,  # a topic deleted
        KafkaError.INVALID_CONFIG,
        KafkaError.OFFSET_OUT_OF_RANGE,
        KafkaError._GAPLESS_GUARANTEE,
    ],
)
def test_conditions_that_need_a_human_are_not(code: int) -> None:
    assert not is_transient(KafkaError(code))


def test_a_fatal_error_is_never_transient() -> None:
    assert not is_transient(KafkaError(KafkaError._TRANSPORT, fatal=True))
    assert not is_transient(None)


def test_condition_names_what_and_where() -> None:
    assert condition_of(KafkaError(KafkaError._NOENT), "orders[3]") == "no leader for orders[3]"
    assert condition_of(KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS)) == (
        "group coordinator loading"
    )


@given(st.integers(0, 200), st.integers(0, 2**32))
def test_backoff_is_bounded_jittered_and_grows(attempt: int, seed: int) -> None:
    backoff = Backoff(first_s=0.25, max_s=5.0, floor_s=0.05)
    delay = backoff.delay(attempt, random.Random(seed))
    cap = min(0.25 * 2**attempt, 5.0)
    assert min(0.05, cap) <= delay <= cap


def test_backoff_spreads_waiters() -> None:
    rng = random.Random(7)
    delays = {round(Backoff().delay(6, rng), 3) for _ in range(50)}
    assert len(delays) > 40, "full jitter: processes waiting together do not retry in step"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _unavailable(cluster: str = "target", condition: str = "no leader for t[0]") -> Exception:
    return ClusterUnavailableError(f"{cluster} down", cluster=cluster, condition=condition)


def _failing(*failures: Exception):  # type: ignore[no-untyped-def]
    """A step that raises ``failures`` one per call, then succeeds."""
    pending = list(failures)

    def step() -> str:
        if pending:
            raise pending.pop(0)
        return "copied"

    return step


def _policy(clock: Clock, events: list[str], limit_s: float = 60.0, **kwargs: object) -> WaitPolicy:
    def pause(seconds: float) -> bool:
        clock.now += seconds + 5  # an attempt against a dead cluster takes its time too
        events.append("pause")
        return True

    def on_wait(o: Outage) -> None:
        events.append(f"wait {o.cluster}: {o.condition}")

    def on_recover(o: Outage) -> None:
        events.append(f"back {o.cluster}")

    options: dict = {
        "on_wait": on_wait,
        "on_recover": on_recover,
        "pause": pause,
        "monotonic": clock,
        "wall": clock,
        "rng": random.Random(1),
        "roles": {"target": "target", "src": "source"},
        **kwargs,
    }
    return WaitPolicy(limit_s, **options)


def test_an_outage_is_waited_out_and_said_once_when_it_starts_and_once_when_it_ends() -> None:
    clock, events = Clock(), []
    policy = _policy(clock, events)
    assert policy.run(_failing(_unavailable(), _unavailable(), _unavailable())) == "copied"
    assert events == ["wait target: no leader for t[0]", "pause", "pause", "pause", "back target"]
    assert policy.outage is None


def test_unreachable_is_an_outage_too() -> None:
    clock, events = Clock(), []
    unreachable = ClusterUnreachableError("x", cluster="src", condition="no broker")
    _policy(clock, events).run(_failing(unreachable))
    # The message is for a one-shot command; the status line names the role.
    assert events[0] == "wait src: no broker"


@pytest.mark.parametrize(
    "error",
    [
        AuthorizationError("denied"),
        TopicNotFoundError("gone"),
        KafkaOperationError("record too large"),
    ],
)
def test_anything_else_stops_at_once(error: Exception) -> None:
    clock, events = Clock(), []
    calls = []

    def step() -> None:
        calls.append(1)
        raise error

    with pytest.raises(type(error)):
        _policy(clock, events).run(step)
    assert calls == [1] and events == []


def test_past_the_deadline_the_outage_stops_the_process_naming_cluster_condition_duration() -> None:
    clock, events = Clock(), []

    def step() -> None:
        raise _unavailable("target", "no leader for orders[3]")

    policy = _policy(clock, events, limit_s=30, resume_hint="start it again")
    with pytest.raises(OutageTooLongError) as raised:
        policy.run(step)
    message = str(raised.value)
    assert message.startswith("target cluster 'target' unavailable for ")
    assert "no leader for orders[3]" in message and "longer than the allowed 30s" in message
    assert message.endswith("; start it again") and "\n" not in message
    assert raised.value.exit_code == 3


def test_a_stop_request_while_waiting_ends_the_wait_without_failure() -> None:
    def step() -> None:
        raise _unavailable()

    policy = WaitPolicy(60, pause=lambda _s: False)
    with pytest.raises(WaitAbandoned):
        policy.run(step)


def test_a_new_outage_after_recovery_starts_a_new_clock() -> None:
    clock, events = Clock(), []
    policy = _policy(clock, events, limit_s=20)
    for _ in range(5):  # five short outages add up past the limit; none alone is too long
        policy.run(_failing(_unavailable()))
        clock.now += 100
    assert events.count("back target") == 5


def test_durations_read_and_written_as_people_do() -> None:
    assert parse_duration("15m") == 900
    assert parse_duration("90") == 90
    assert parse_duration("1h30m") == 5400
    assert parse_duration("2.5s") == 2.5
    for bad in ["", "x", "0", "-5", "5 minutes"]:
        assert parse_duration(bad) is None
    assert duration_text(900) == "15m"
    assert duration_text(5400) == "1h30m"
    assert duration_text(4.2) == "4s"

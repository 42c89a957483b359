"""Creating many topics at once: how they are batched, and how failures are reported."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from kmigrate.errors import (
    AuthorizationError,
    ClusterUnavailableError,
    KMigrateError,
    TopicExistsError,
)
from kmigrate.kafka.admin.failures import together
from kmigrate.kafka.admin.topics import request_batches


@given(st.lists(st.integers(1, 12_000), max_size=60), st.integers(1, 10_000))
def test_batches_keep_order_and_stay_under_the_limit(weights: list[int], limit: int) -> None:
    batches = request_batches(list(enumerate(weights)), lambda item: item[1], limit)
    assert [item for batch in batches for item in batch] == list(enumerate(weights))
    for batch in batches:
        assert batch, "an empty batch is a request for nothing"
        assert sum(w for _, w in batch) <= limit or len(batch) == 1
    # Batches are full: the next batch's first item did not fit in the one before.
    for before, after in pairwise(batches):
        assert sum(w for _, w in before) + after[0][1] > limit


def test_a_thousand_topics_of_ten_partitions_take_three_requests() -> None:
    batches = request_batches(range(1_000), lambda _: 1 + 10, 5_000)
    assert [len(b) for b in batches] == [454, 454, 92]


def test_one_topic_of_one_request_fails_with_its_own_error() -> None:
    error = TopicExistsError("topic 'a' already exists on cluster 't'")
    assert together([("a", error)], total=1, noun="topic", outcome="x") is error


def test_every_failure_is_named_and_shared_reasons_are_given_once() -> None:
    denied = "cluster 't' denied 'create topic' (TOPIC_AUTHORIZATION_FAILED)"
    failures = [
        ("a", TopicExistsError("topic 'a' already exists on cluster 't'")),
        ("b", TopicExistsError(denied)),
        ("c", TopicExistsError(denied)),
        ("d", TopicExistsError("create topic on cluster 't' failed: bad config")),
    ]
    error = together(
        failures, total=10, noun="topic", outcome="could not be created on cluster 't'"
    )
    assert isinstance(error, TopicExistsError) and error.exit_code == 5
    assert str(error) == (
        "4 of 10 topics could not be created on cluster 't': "
        "topic 'a' already exists on cluster 't'; "
        f"topics 'b', 'c': {denied}; "
        "topic 'd': create topic on cluster 't' failed: bad config"
    )


def test_the_combined_error_keeps_what_its_class_carries() -> None:
    """A transient failure stays transient (long-running processes wait it out)."""
    first = ClusterUnavailableError("no leader", cluster="t", condition="no leader for a[0]")
    error = together(
        [("a", first), ("b", TopicExistsError("topic 'b' already exists"))],
        total=2,
        noun="topic",
        outcome="could not be created",
    )
    assert isinstance(error, ClusterUnavailableError)
    assert (error.cluster, error.condition) == ("t", "no leader for a[0]")
    assert error.message.startswith("2 of 2 topics could not be created: topic 'a': no leader")


def test_a_thousand_failures_make_one_readable_line_and_a_complete_detail() -> None:
    denied = AuthorizationError("cluster 't' denied 'create topic'")
    failures: list[tuple[str, KMigrateError]] = [(f"d{i}", denied) for i in range(985)]
    failures += [(f"e{i}", TopicExistsError(f"topic 'e{i}' already exists")) for i in range(15)]
    error = together(failures, total=2_000, noun="topic", outcome="could not be created")
    assert isinstance(error, AuthorizationError)
    assert error.message.startswith(
        "1000 of 2000 topics could not be created: topics 'd0', 'd1', 'd2', 'd3', 'd4', "
        "'d5', 'd6', 'd7', 'd8', 'd9' and 975 more: cluster 't' denied 'create topic'; "
        "topic 'e0' already exists; "
    )
    assert error.message.endswith("topic 'e8' already exists; and 6 more reason(s)")
    assert error.detail is not None
    lines = error.detail.splitlines()
    assert len(lines) == 1_000
    assert lines[0] == "d0: cluster 't' denied 'create topic'"
    assert lines[-1] == "e14: topic 'e14' already exists"

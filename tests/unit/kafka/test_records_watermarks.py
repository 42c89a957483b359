"""read_partition's watermark lookup asks again while the broker answers with a passing
condition (NOT_LEADER_FOR_PARTITION right after a roll: a kraft revert test's read
failed on it under load), and fails at once on anything else."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kmigrate.config import ClusterConfig
from kmigrate.kafka.records import _watermarks


class Answers:
    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.asked = 0

    def get_watermark_offsets(self, _tp: TopicPartition, timeout: float) -> tuple[int, int]:
        self.asked += 1
        answer = self.answers.pop(0)
        if isinstance(answer, KafkaError):
            raise KafkaException(answer)
        assert isinstance(answer, tuple)
        return answer


CLUSTER = ClusterConfig(name="c", bootstrap_servers="127.0.0.1:1")
TP = TopicPartition("t", 0)


def test_a_moving_leader_is_asked_again() -> None:
    moving = KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION)
    client = Answers(moving, moving, (3, 9))
    assert _watermarks(client, TP, CLUSTER, time.monotonic() + 10) == (3, 9)
    assert client.asked == 3


def test_a_lasting_error_fails_at_once() -> None:
    client = Answers(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED), (0, 1))
    with pytest.raises(KafkaException):
        _watermarks(client, TP, CLUSTER, time.monotonic() + 10)
    assert client.asked == 1


def test_a_moving_leader_past_the_deadline_fails() -> None:
    client = Answers(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION), (0, 1))
    with pytest.raises(KafkaException):
        _watermarks(client, TP, CLUSTER, time.monotonic() - 1)

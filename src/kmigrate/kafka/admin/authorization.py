"""Asking the cluster's authorizer without changing anything: requests that are
authorized first and then only validated (``validate_only``) or only read, each
answered "allowed" or "denied (<Kafka error>)".

An answer that is neither (the cluster could not decide now: a broker restarting, a
controller moving) raises the kmigrate error, so a caller waits and asks again."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from kmigrate.kafka.admin.acls import match_all
from kmigrate.kafka.admin.connection import AdminConnection
from kmigrate.kafka.errors import kafka_error_of
from kmigrate.kafka.retry import is_transient

ALLOWED = "allowed"
# What a probe changes if it were not only validated: a week's retention, one partition.
_PROBE_CONFIG = ("retention.ms", "604800000")


class Authorization:
    """The authorizer's answer to one kind of request on one resource."""

    def __init__(self, conn: AdminConnection) -> None:
        self._conn = conn
        self._asks: dict[str, Callable[[str], Future[Any]]] = {
            "alter-config": self._alter_config,
            "describe-configs": self._describe_configs,
            "create-topic": self._create_topic,
            "describe-group": self._describe_group,
            "describe-acls": self._describe_acls,
        }

    @property
    def actions(self) -> tuple[str, ...]:
        return tuple(self._asks)

    def answer(self, action: str, resource: str) -> str:
        """ "allowed" or "denied (TOPIC_AUTHORIZATION_FAILED)" for ``action`` on
        ``resource`` (a topic, a group, or "" for the cluster)."""
        future = self._asks[action](resource)
        try:
            future.result(timeout=self._conn.timeout + 5)
        except Exception as exc:
            error = kafka_error_of(exc)
            if error is not None and "AUTHORIZATION_FAILED" in error.name():
                return f"denied ({error.name()})"
            if error is None or is_transient(error):
                asked = f"ask the authorizer ({action} {resource})"
                raise self._conn.translate(exc, asked) from exc
            # authorized, then refused for another reason (a policy, a validation)
        return ALLOWED

    def _alter_config(self, topic: str) -> Future[Any]:
        key, value = _PROBE_CONFIG
        entry = ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
        futures = self._conn.client.incremental_alter_configs(
            [resource], validate_only=True, request_timeout=self._conn.timeout
        )
        return _only(futures)

    def _describe_configs(self, topic: str) -> Future[Any]:
        resource = ConfigResource(ResourceType.TOPIC, topic)
        return _only(
            self._conn.client.describe_configs([resource], request_timeout=self._conn.timeout)
        )

    def _create_topic(self, topic: str) -> Future[Any]:
        futures = self._conn.client.create_topics(
            [NewTopic(topic, num_partitions=1)],
            validate_only=True,
            operation_timeout=self._conn.timeout,
            request_timeout=self._conn.timeout,
        )
        return _only(futures)

    def _describe_group(self, group: str) -> Future[Any]:
        # not OffsetFetch: librdkafka 2.16 aborts when it meets a coordinator not ready
        # (confluent-kafka-python#1982), which a probe right after a restart would
        return _only(
            self._conn.client.describe_consumer_groups([group], request_timeout=self._conn.timeout)
        )

    def _describe_acls(self, _cluster: str) -> Future[Any]:
        future: Future[Any] = self._conn.client.describe_acls(
            match_all(), request_timeout=self._conn.timeout
        )
        return future


def _only(futures: dict[Any, Future[Any]]) -> Future[Any]:
    (future,) = futures.values()
    return future

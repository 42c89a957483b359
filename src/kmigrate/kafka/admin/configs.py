"""Dynamic configs of topics and brokers (each broker's and the cluster-wide default):
what was set, as opposed to defaults."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from kmigrate.kafka.admin.connection import AdminConnection

_DYNAMIC_TOPIC = ConfigSource.DYNAMIC_TOPIC_CONFIG.value
_DYNAMIC_BROKER = ConfigSource.DYNAMIC_BROKER_CONFIG.value
_DYNAMIC_DEFAULT = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
_RESOURCE = {"topic": ResourceType.TOPIC, "broker": ResourceType.BROKER}


def configs_settled(changes: Mapping[str, str | None], described: Mapping[str, str | None]) -> bool:
    """Whether ``described`` (the dynamic configs, a sensitive one's value None) shows
    every value set and none removed."""
    return all(
        key not in described
        if value is None
        else key in described and described[key] in (None, value)
        for key, value in changes.items()
    )


class Configs:
    """Reads and changes the dynamic configs of topics and brokers."""

    def __init__(self, conn: AdminConnection) -> None:
        self._conn = conn

    def dynamic_configs(self, kind: str, name: str) -> dict[str, str]:
        """The dynamic (set, not default) configs of a ``topic`` or ``broker``."""
        return {n: v for n, v in self._dynamic(kind, name).items() if v is not None}

    def _dynamic(self, kind: str, name: str) -> dict[str, str | None]:
        resource = ConfigResource(_RESOURCE[kind], name)
        futures = self._conn.client.describe_configs([resource], request_timeout=self._conn.timeout)
        (entries,) = self._conn.wait_all(futures, f"describe {kind} configs").values()
        dynamic = {_DYNAMIC_TOPIC, _DYNAMIC_BROKER}
        return {n: e.value for n, e in entries.items() if _source_value(e.source) in dynamic}

    def set_configs(self, kind: str, name: str, changes: Mapping[str, str | None]) -> None:
        """Set (a value) or remove (None) dynamic configs of a ``topic`` or ``broker``.
        Returns once describing shows the change, or after the cluster's timeout: on
        KRaft a broker describes what it has applied, a moment after the controller
        answered."""
        entries = [
            ConfigEntry(
                key,
                value,
                incremental_operation=(
                    AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
                ),
            )
            for key, value in changes.items()
        ]
        if not entries:
            return
        resource = ConfigResource(_RESOURCE[kind], name, incremental_configs=entries)
        futures = self._conn.client.incremental_alter_configs(
            [resource], request_timeout=self._conn.timeout
        )
        self._conn.wait_all(futures, f"alter {kind} configs")
        self._conn.until_shown(lambda: configs_settled(changes, self._dynamic(kind, name)))

    def broker_configs(self, node_ids: list[int]) -> dict[str, dict[str, str]]:
        """The dynamic configs set per broker (keyed by its id) and for every broker
        (keyed "default", as the brokers report them); none set: not listed."""
        found: dict[str, dict[str, str]] = {"default": {}}
        for node_id in node_ids:  # one BROKER resource per request (librdkafka)
            resource = ConfigResource(ResourceType.BROKER, str(node_id))
            futures = self._conn.client.describe_configs(
                [resource], request_timeout=self._conn.timeout
            )
            (entries,) = self._conn.wait_all(futures, "describe broker configs").values()
            for name, e in entries.items():
                source = _source_value(e.source)
                if e.value is None or source not in (_DYNAMIC_BROKER, _DYNAMIC_DEFAULT):
                    continue
                key = str(node_id) if source == _DYNAMIC_BROKER else "default"
                found.setdefault(key, {})[name] = e.value
        return {key: configs for key, configs in sorted(found.items()) if configs}

    def topic_configs(self, names: list[str]) -> dict[str, dict[str, str]]:
        """Each topic's configs that were set on the topic (not cluster defaults)."""
        resources = [ConfigResource(ResourceType.TOPIC, n) for n in names]
        futures = self._conn.client.describe_configs(resources, request_timeout=self._conn.timeout)
        result = {}
        for resource, future in futures.items():
            entries = self._conn.wait(future, "describe topic configs", topic=resource.name)
            result[resource.name] = {
                name: e.value
                for name, e in entries.items()
                if _source_value(e.source) == _DYNAMIC_TOPIC and e.value is not None
            }
        return result


def _source_value(source: Any) -> Any:
    return getattr(source, "value", source)

"""Client quotas (KIP-546): every quota entity with its values, and setting or removing
values. confluent-kafka has no DescribeClientQuotas or AlterClientQuotas, so these go
through kafka-python's protocol classes, like reassignments. Works on ZooKeeper-mode and
KRaft clusters (Kafka 2.6 and later).

An entity is what a quota applies to, as (type, name) pairs in Kafka's order: ``user``,
``client-id``, ``ip``; a name of None is that type's default (``<default>`` in Kafka's
tools). Values are numbers: byte rates, ``request_percentage``,
``controller_mutation_rate``, ``connection_creation_rate``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kmigrate.errors import KafkaOperationError
from kmigrate.kafka.python_admin import KafkaPythonAdmin
from kmigrate.kafka.retry import until_shown
from kmigrate.model.quotas import ENTITY_TYPES, Entity, entity_text


def applied(
    changes: Mapping[Entity, Mapping[str, float | None]],
    found: Mapping[Entity, Mapping[str, float]],
) -> bool:
    """Whether ``found`` (as described) holds every value set and none removed."""
    return all(
        found.get(ordered(entity), {}).get(key) == (None if value is None else float(value))
        for entity, values in changes.items()
        for key, value in values.items()
    )


def ordered(entity: Entity) -> Entity:
    """The entity's pairs in Kafka's order (user, client-id, ip)."""
    return tuple(sorted(entity, key=lambda pair: ENTITY_TYPES.index(pair[0])))


class ClientQuotas(KafkaPythonAdmin):
    CLIENT_ID = "kmigrate-quotas"

    def describe(self) -> dict[Entity, dict[str, float]]:
        """Every entity with a quota set, and its values."""
        from kafka.protocol.admin import DescribeClientQuotasRequest

        request = DescribeClientQuotasRequest(components=[], strict=False)
        response = self._call("describing client quotas", self._send, request)
        self._refused(response, "describing client quotas")
        found: dict[Entity, dict[str, float]] = {}
        for entry in response.entries or ():
            entity = ordered(tuple((e.entity_type, e.entity_name) for e in entry.entity))
            found[entity] = {v.key: float(v.value) for v in entry.values}
        return found

    def alter(self, changes: Mapping[Entity, Mapping[str, float | None]]) -> None:
        """Set each value (a number) or remove it (None), entity by entity; a refused
        entity is one line naming it and Kafka's reason. Returns once describing reads
        the changes back, or after the cluster's timeout: a KRaft controller answers
        when it has committed the change, and a broker describes what it has applied
        since, a moment later."""
        if not changes:
            return
        from kafka.protocol.admin import AlterClientQuotasRequest

        entry, entity_data, op = (
            AlterClientQuotasRequest.EntryData,
            AlterClientQuotasRequest.EntryData.EntityData,
            AlterClientQuotasRequest.EntryData.OpData,
        )
        entries = [
            entry(
                entity=[entity_data(entity_type=k, entity_name=n) for k, n in entity],
                ops=[
                    op(key=key, value=0.0 if value is None else float(value), remove=value is None)
                    for key, value in values.items()
                ],
            )
            for entity, values in changes.items()
        ]
        request = AlterClientQuotasRequest(entries=entries, validate_only=False)
        response = self._call("altering client quotas", self._send, request)
        for entry in response.entries or ():
            if entry.error_code:
                from kafka.errors import for_code

                entity = ordered(tuple((e.entity_type, e.entity_name) for e in entry.entity))
                raise KafkaOperationError(
                    f"cluster '{self.cluster.name}' refused the quotas of "
                    f"{entity_text(entity)}: {for_code(entry.error_code).__name__}"
                    + (f" ({entry.error_message})" if entry.error_message else "")
                )
        until_shown(lambda: applied(changes, self.describe()), self.cluster.timeout_s)

    def _send(self, request: Any) -> Any:
        # Encoded here first: a request that cannot be encoded fails in this thread, not
        # in kafka-python's I/O thread, where the wait for its answer would never end.
        request.encode(version=request.max_version)
        manager = self._client._manager  # kafka-python 3.0 (pinned): its request sender

        async def send() -> Any:
            return await manager.send(request)

        return manager.run(send)

    def _refused(self, response: object, action: str) -> None:
        code = getattr(response, "error_code", 0)
        if code:
            from kafka.errors import for_code

            message = getattr(response, "error_message", None) or for_code(code).__name__
            raise KafkaOperationError(f"cluster '{self.cluster.name}': {action}: {message}")

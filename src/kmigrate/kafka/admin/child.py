"""The child process of :mod:`kmigrate.kafka.admin.isolated`: the admin calls librdkafka
can kill its process with, made with an admin client of its own.

Run as a script (no kmigrate import: it starts in ~0.1 s). The first line on stdin is
``{"config": {...}, "timeout_s": N}`` (the client config: never argv, it holds the
password); then one JSON request per line, ``{"call": NAME, "args": {...}}``, each
answered by one line: ``{"result": ...}`` or ``{"error": [code, reason],
"client_error": [code, reason] | null}``. It ends when stdin closes.
"""

import json
import sys
from collections.abc import Callable
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient


class _Quiet:
    def log(self, *_args: object) -> None:
        """librdkafka's log lines: the parent reports failures itself."""


def describe_cluster(client: AdminClient, timeout: float, authorized: bool = False) -> Any:
    future = client.describe_cluster(
        request_timeout=timeout, include_authorized_operations=authorized
    )
    result = future.result(timeout=timeout + 5)
    controller = result.controller.id if result.controller is not None else None
    brokers = [[n.id, n.host, n.port, n.rack] for n in result.nodes]
    found = {"cluster_id": result.cluster_id, "controller": controller, "brokers": brokers}
    if authorized:
        ops = result.authorized_operations
        found["authorized_operations"] = None if ops is None else [op.name for op in ops]
    return found


def groups_offsets(client: AdminClient, timeout: float, groups: list[str]) -> Any:
    """Every group's committed offsets, or its error: all OffsetFetch requests in flight
    at once (the client takes one group per call), then each awaited."""
    futures = {}
    for group in groups:
        futures.update(
            client.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group)], request_timeout=timeout
            )
        )
    answers: dict[str, Any] = {}
    for group, future in futures.items():
        try:
            result = future.result(timeout=timeout + 5)
        except KafkaException as exc:
            answers[group] = {"error": [exc.args[0].code(), exc.args[0].str()]}
            continue
        except TimeoutError:
            answers[group] = {"error": [KafkaError._TIMED_OUT, "no answer in time"]}
            continue
        answers[group] = {
            "offsets": [
                [tp.topic, tp.partition, tp.offset, tp.error.code() if tp.error else None]
                for tp in result.topic_partitions
            ]
        }
    return answers


CALLS: dict[str, Callable[..., Any]] = {
    "describe_cluster": describe_cluster,
    "groups_offsets": groups_offsets,
}


def main() -> None:
    setup = json.loads(sys.stdin.readline())
    seen: list[KafkaError] = []
    client = AdminClient(dict(setup["config"], error_cb=seen.append, logger=_Quiet()))
    timeout = float(setup["timeout_s"])
    for line in sys.stdin:
        request = json.loads(line)
        seen.clear()
        try:
            answer = {"result": CALLS[request["call"]](client, timeout, **request["args"])}
        except KafkaException as exc:
            client.poll(0)  # serve error_cb: why a broker was unreachable
            last = [seen[-1].code(), seen[-1].str()] if seen else None
            answer = {"error": [exc.args[0].code(), exc.args[0].str()], "client_error": last}
        except TimeoutError:
            answer = {"error": [KafkaError._TIMED_OUT, "no answer in time"]}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

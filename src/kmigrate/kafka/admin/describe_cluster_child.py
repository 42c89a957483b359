"""The child process of :mod:`kmigrate.kafka.admin.isolated`: one DescribeCluster call.

Run as a script (no kmigrate import: it starts in ~0.1 s). Reads the client config as
JSON on stdin (never argv: it holds the password), prints one JSON object on stdout:
``{"cluster": {...}}``, or ``{"error": [code, reason], "client_error": [code, reason]}``.
"""

import json
import sys

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient


class _Quiet:
    def log(self, *_args: object) -> None:
        """librdkafka's log lines: the parent reports failures itself."""


def main() -> None:
    request = json.load(sys.stdin)
    seen: list[KafkaError] = []
    conf = dict(request["config"], error_cb=seen.append, logger=_Quiet())
    timeout = float(request["timeout_s"])
    client = AdminClient(conf)
    try:
        result = client.describe_cluster(request_timeout=timeout).result(timeout=timeout + 5)
    except KafkaException as exc:
        error = exc.args[0]
        client.poll(0)  # serve error_cb: why a broker was unreachable
        last = [seen[-1].code(), seen[-1].str()] if seen else None
        print(json.dumps({"error": [error.code(), error.str()], "client_error": last}))
        return
    except TimeoutError:
        print(json.dumps({"error": [KafkaError._TIMED_OUT, "no answer in time"]}))
        return
    brokers = [[n.id, n.host, n.port, n.rack] for n in result.nodes]
    controller = result.controller.id if result.controller is not None else None
    cluster = {"cluster_id": result.cluster_id, "controller": controller, "brokers": brokers}
    print(json.dumps({"cluster": cluster}))


if __name__ == "__main__":
    main()

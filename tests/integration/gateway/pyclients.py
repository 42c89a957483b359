"""confluent-kafka's and kafka-python's idempotent producers as separate processes that
speak Apache Kafka's VerifiableProducer language (tests/integration/gateway/verifiable.py):

    python -m tests.integration.gateway.pyclients confluent|kafka-python \\
        --bootstrap B --topic T --rate N --keys K --prefix P
    python -m tests.integration.gateway.pyclients kafka-python-consumer \\
        --bootstrap B --topic T --group G

Values are "P.<n>" in send order, keys str(n % K); one JSON line per acknowledged or
failed record and per producer id/epoch the client is given; SIGTERM stops sending,
flushes and exits.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any


def _say(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


class _Epochs:
    """Reports each (producer id, epoch) the client shows, once."""

    def __init__(self) -> None:
        self.seen: tuple[int, int] | None = None

    def show(self, pid: int, epoch: int) -> None:
        if pid >= 0 and (pid, epoch) != self.seen:
            self.seen = (pid, epoch)
            _say({"name": "producer_epoch", "producer_id": pid, "epoch": epoch})


def _confluent(args: argparse.Namespace, stop: threading.Event) -> None:
    from confluent_kafka import Producer

    epochs = _Epochs()

    def stats(raw: str) -> None:
        eos = json.loads(raw).get("eos", {})
        epochs.show(int(eos.get("producer_id", -1)), int(eos.get("producer_epoch", -1)))

    def report(error: Any, message: Any) -> None:
        value = message.value().decode()
        if error is None:
            _say({"name": "producer_send_success", "partition": message.partition(),
                  "offset": message.offset(), "value": value})  # fmt: skip
        else:
            _say({"name": "producer_send_error", "exception": error.str(), "value": value})

    producer = Producer({"bootstrap.servers": args.bootstrap, "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": 120_000,
                         "topic.metadata.refresh.interval.ms": 5000,
                         "statistics.interval.ms": 200, "stats_cb": stats})  # fmt: skip

    def send(n: int) -> None:
        producer.produce(args.topic, f"{args.prefix}.{n}".encode(), str(n % args.keys).encode(),
                         on_delivery=report)  # fmt: skip
        producer.poll(0)

    _paced(args.rate, stop, send, lambda: producer.poll(0.005))
    producer.flush(150)
    producer.poll(0.5)  # the last statistics


def _kafka_python(args: argparse.Namespace, stop: threading.Event) -> None:
    from kafka import KafkaProducer

    epochs = _Epochs()
    producer = KafkaProducer(bootstrap_servers=args.bootstrap, enable_idempotence=True,
                             acks="all", linger_ms=5, delivery_timeout_ms=120_000,
                             metadata_max_age_ms=5000)  # fmt: skip

    def watch() -> None:
        manager = getattr(producer, "_transaction_manager", None)
        found = getattr(manager, "producer_id_and_epoch", None) if manager else None
        if found is not None:
            epochs.show(int(found.producer_id), int(found.epoch))

    def send(n: int) -> None:
        value = f"{args.prefix}.{n}"

        def ok(meta: Any) -> None:
            _say({"name": "producer_send_success", "partition": meta.partition,
                  "offset": meta.offset, "value": value})  # fmt: skip

        def failed(exc: BaseException) -> None:
            _say({"name": "producer_send_error", "exception": repr(exc), "value": value})

        future = producer.send(args.topic, value.encode(), str(n % args.keys).encode())
        future.add_callback(ok).add_errback(failed)
        watch()

    _paced(args.rate, stop, send, lambda: time.sleep(0.005))
    producer.flush(150)
    watch()
    producer.close(30)


def _kafka_python_consumer(args: argparse.Namespace, stop: threading.Event) -> None:
    """A committing group consumer: one {"name": "record", ...} line per record."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(args.topic, bootstrap_servers=args.bootstrap, group_id=args.group,
                             auto_offset_reset="earliest", metadata_max_age_ms=5000)  # fmt: skip
    while not stop.is_set():
        for records in consumer.poll(timeout_ms=200).values():
            for r in records:
                _say({"name": "record", "partition": r.partition, "offset": r.offset,
                      "value": r.value.decode()})  # fmt: skip
    consumer.close()


def _paced(rate: int, stop: threading.Event, send: Callable[[int], None],
           idle: Callable[[], None]) -> None:  # fmt: skip
    started, n = time.monotonic(), 0
    while not stop.is_set():
        if n < (time.monotonic() - started) * rate:
            send(n)
            n += 1
        else:
            idle()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("client", choices=["confluent", "kafka-python", "kafka-python-consumer"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--rate", type=int, default=500)
    parser.add_argument("--keys", type=int, default=60)
    parser.add_argument("--prefix", default=None)
    parser.add_argument("--group", default=None)
    args = parser.parse_args()
    args.prefix = args.prefix or args.client
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    run = {"confluent": _confluent, "kafka-python": _kafka_python,
           "kafka-python-consumer": _kafka_python_consumer}[args.client]  # fmt: skip
    run(args, stop)
    _say({"name": "shutdown_complete"})


if __name__ == "__main__":
    main()

"""Latency at a fixed, unsaturating rate: produce acknowledgement and end-to-end delivery.

The end-to-end runs use the franz-go test client (harness/ecosystems/franz-go, built with Go
on first use): its producer sends ``rate`` records/s, each stamped with its send time
(nanoseconds, a header), and prints how long each took to be acknowledged; its group
consumer, started and assigned before the first record is sent, prints each record's
arrival minus its send time. Producer and consumer run on this machine, one clock.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

from common import WORK

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # the test clients are built from harness/ecosystems
from harness.ecosystems import franz  # noqa: E402

WARMUP_S = 1  # the first second (connections, producer id, metadata) is not counted


def percentiles(values: list[float]) -> dict[str, float]:
    """p50, p99 and the mean of ``values`` in ms, to 0.01 ms."""
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {
        "p50_ms": round(statistics.median(values), 2),
        "p99_ms": round(cuts[98], 2),
        "avg_ms": round(statistics.fmean(values), 2),
    }


def _wait(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f}s: {what}")
        time.sleep(0.2)


def end_to_end(bootstrap: str, topic: str, rate: int, seconds: int, size: int) -> dict:
    """One run: ``rate`` records/s of ``size`` bytes for ``seconds`` through ``bootstrap``
    (a topic of its own); franz-go's acknowledgement and end-to-end percentiles."""
    sent, read = WORK / f"{topic}-produce.jsonl", WORK / f"{topic}-consume.jsonl"
    consumer = franz.start("consume", read, "--bootstrap", bootstrap, "--topic", topic,
                           "--group", f"{topic}-group")  # fmt: skip
    try:
        _wait(lambda: franz.events(read, "partitions_assigned") or consumer.poll() is not None,
              60, f"the consumer of {topic} joined its group")  # fmt: skip
        producer = franz.start(
            "produce", sent, "--bootstrap", bootstrap, "--topic", topic, "--rate", str(rate),
            "--max", str(rate * seconds), "--size", str(size), "--linger-ms", "5",
        )  # fmt: skip
        try:
            code = producer.wait(seconds * 3 + 60)
        finally:
            franz.stop(producer)
        if code != 0:
            raise RuntimeError(f"franz produce failed: {_tail(sent.with_suffix('.err'))}")
        acked = franz.events(sent, "producer_send_success")
        _wait(lambda: len(franz.events(read, "record")) >= len(acked), 60,
              f"the consumer of {topic} read all {len(acked)} records")  # fmt: skip
    finally:
        franz.stop(consumer)
    skip = rate * WARMUP_S
    return {
        "records": len(acked),
        "failed": len(franz.events(sent, "producer_send_error")),
        "ack": percentiles([e["ack_ms"] for e in acked if int(e["value"]) >= skip]),
        "e2e": percentiles(
            [e["e2e_ms"] for e in franz.events(read, "record") if int(e["value"]) >= skip]
        ),
    }


def _tail(path: Path) -> str:
    return path.read_text()[-1500:] if path.exists() else ""

"""The admin calls that can kill the process making them, made by a child process.

librdkafka (every release through 2.16, and its master of 2026-07) has two such:

- DescribeCluster aborts (SIGABRT, "rd_kafka_admin_response_parse: Assertion
  `rko_result' failed") when the broker it takes for the controller answers its Metadata
  request with no brokers: the parser turns that answer into an internal "partial"
  error without marking the buffer, so ``rd_kafka_DescribeClusterResponse_parse``
  returns "no error" and no result. A ZooKeeper-mode broker answers so between the
  start of its listener and the controller's first UpdateMetadata, i.e. as it restarts.
- ListConsumerGroupOffsets (OffsetFetch) crashes (SIGSEGV in ``rd_kafka_cgrp_op`` on a
  NULL consumer group) when the answer is NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE
  (librdkafka#5040, confluent-kafka-python#1982), as while a coordinator moves.

One child per connection, started at the first such call, keeps its own admin client
and answers one JSON line per call. If it dies, that call fails as the cluster being
briefly unavailable and the next call starts a new child; kmigrate lives on.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaError, KafkaException

from kmigrate.errors import ClusterUnavailableError, KMigrateError
from kmigrate.kafka.clients import _base_config

if TYPE_CHECKING:
    from kmigrate.kafka.admin.connection import AdminConnection

CHILD = Path(__file__).with_name("child.py")


class _Gone(Exception):
    """The child died or stopped answering; says how."""


class Isolated:
    """The child process of one admin connection (thread-safe)."""

    def __init__(self, conn: AdminConnection) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None

    def call(self, name: str, action: str, group: str | None = None, **extra: Any) -> Any:
        """The child's result for ``name`` (``extra``: its JSON arguments); a failure as
        the kmigrate error for ``action``."""
        args = {"group": group, **extra} if group is not None else dict(extra)
        with self._lock:
            try:
                answer = self._ask({"call": name, "args": args})
            except _Gone as gone:
                self.close()
                raise _unavailable(self._conn, action, str(gone)) from None
        if "error" in answer:
            failure = _failed(self._conn, answer, action, group)
            if isinstance(failure, ClusterUnavailableError):
                # a client that knew a broker before its restart may never reach it again
                # (librdkafka does not refresh it): the next call starts a fresh child
                with self._lock:
                    self.close()
            raise failure
        return answer["result"]

    def close(self) -> None:
        if self._child is not None:
            _end(self._child)
            self._child = None

    def _ask(self, request: dict[str, Any]) -> Any:
        child = self._child or self._start()
        try:
            assert child.stdin is not None
            child.stdin.write(json.dumps(request).encode() + b"\n")
            child.stdin.flush()
        except OSError:
            raise _Gone(_how(child)) from None
        return json.loads(_read_line(child, self._conn.timeout + 30))

    def _start(self) -> subprocess.Popen[bytes]:
        config = _base_config(self._conn.cluster, self._conn.trap, {})
        del config["error_cb"], config["logger"]
        child = subprocess.Popen(
            [sys.executable, str(CHILD)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        weakref.finalize(self, _end, child)  # a connection never closed ends it too
        assert child.stdin is not None
        setup = {"config": config, "timeout_s": self._conn.timeout}
        child.stdin.write(json.dumps(setup).encode() + b"\n")
        self._child = child
        return child


def _read_line(child: subprocess.Popen[bytes], timeout: float) -> bytes:
    assert child.stdout is not None
    fd = child.stdout.fileno()
    deadline = time.monotonic() + timeout
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            child.kill()
            raise _Gone(f"its child process did not answer within {timeout:g}s")
        chunk = os.read(fd, 65536)
        if not chunk:
            raise _Gone(_how(child))
        line += chunk
    return line


def _how(child: subprocess.Popen[bytes]) -> str:
    try:
        code = child.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return "its child process stopped answering"
    if code < 0:
        return f"its child process was killed by {signal.Signals(-code).name}"
    return f"its child process exited with code {code}"


def _end(child: subprocess.Popen[bytes]) -> None:
    """Close its stdin (it ends), kill it if it does not."""
    try:
        if child.stdin is not None:
            child.stdin.close()
        child.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        child.kill()
        child.wait()


def _unavailable(conn: AdminConnection, action: str, how: str) -> ClusterUnavailableError:
    return ClusterUnavailableError(
        f"{action} on cluster '{conn.cluster.name}' failed: {how} (librdkafka kills the "
        "process making this call when a broker restarts or a coordinator moves); try again",
        cluster=conn.cluster.name,
        condition="a broker restarting",
    )


def _failed(
    conn: AdminConnection, answer: dict[str, Any], action: str, group: str | None
) -> KMigrateError:
    code, reason = answer["error"]
    if answer.get("client_error"):
        conn.trap(KafkaError(*answer["client_error"]))
    return conn.translate(KafkaException(KafkaError(code, reason)), action, group=group)

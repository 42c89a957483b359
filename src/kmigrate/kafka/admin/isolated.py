"""DescribeCluster, run in a child process so that a native abort cannot kill kmigrate.

librdkafka (through 2.16 at least) aborts the whole process with
"rd_kafka_admin_response_parse: Assertion `rko_result' failed" when the broker it takes
for the controller answers DescribeCluster's Metadata request with no brokers: its
parser turns that answer into an internal "partial" error without marking the buffer,
so ``rd_kafka_DescribeClusterResponse_parse`` returns "no error" and no result. A
ZooKeeper-mode broker answers so between the start of its listener and the controller's
first UpdateMetadata, i.e. while it (re)starts. In a child the abort is a failed call,
reported as the cluster being briefly unavailable.

Everything else in the admin layer reads the cluster through the Metadata path, which
turns the same answer into an ordinary error (see ``Brokers.cluster_metadata``).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from kmigrate.errors import ClusterUnavailableError
from kmigrate.kafka.admin.connection import AdminConnection
from kmigrate.kafka.clients import _base_config
from kmigrate.model.cluster import Broker, ClusterInfo

CHILD = Path(__file__).with_name("describe_cluster_child.py")


def describe_cluster(conn: AdminConnection) -> ClusterInfo:
    """Brokers (with racks), controller and cluster id, asked by a child process."""
    config = _base_config(conn.cluster, conn.trap, {})
    del config["error_cb"], config["logger"]
    request = json.dumps({"config": config, "timeout_s": conn.timeout})
    try:
        done = subprocess.run(
            [sys.executable, str(CHILD)],
            input=request,
            capture_output=True,
            text=True,
            timeout=conn.timeout + 30,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise _unavailable(conn, "its child process did not finish") from exc
    if done.returncode != 0:
        how = (
            f"its child process was killed by {signal.Signals(-done.returncode).name}"
            if done.returncode < 0
            else f"its child process failed ({done.stderr.strip().splitlines()[-1:]})"
        )
        raise _unavailable(conn, how)
    answer = json.loads(done.stdout)
    if "error" in answer:
        raise _failed(conn, answer)
    return _cluster_info(answer["cluster"])


def _unavailable(conn: AdminConnection, how: str) -> ClusterUnavailableError:
    return ClusterUnavailableError(
        f"cluster '{conn.cluster.name}' could not be described: {how} (librdkafka aborts "
        "DescribeCluster when a restarting broker answers with no brokers); try again",
        cluster=conn.cluster.name,
        condition="a broker restarting",
    )


def _failed(conn: AdminConnection, answer: dict[str, Any]) -> Exception:
    code, reason = answer["error"]
    if answer.get("client_error"):
        conn.trap(KafkaError(*answer["client_error"]))
    return conn.translate(KafkaException(KafkaError(code, reason)), "describe cluster")


def _cluster_info(found: dict[str, Any]) -> ClusterInfo:
    brokers = sorted(
        (Broker(int(i), host, int(port), rack or None) for i, host, port, rack in found["brokers"]),
        key=lambda b: b.node_id,
    )
    return ClusterInfo(found["cluster_id"], found["controller"], tuple(brokers))

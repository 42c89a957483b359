"""When a sandbox broker counts as up: the process the sandbox started lives, and the
broker answers a Metadata request on its own endpoint (a client bootstrapped on it
alone), listing itself and every broker of its cluster.

A registration in ZooKeeper proves nothing: a ZooKeeper-mode broker stopped without
closing its session leaves /brokers/ids/N for up to zookeeper.session.timeout.ms, and a
broker started meanwhile exits ("node already exists"). ``wait_unregistered`` waits
such a registration out before a start.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from kmigrate.errors import BrokerStartError, KMigrateError, SandboxError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kraft.world import Znodes
from kmigrate.net import is_listening
from kmigrate.sandbox import process
from kmigrate.sandbox.clusters_yaml import cluster_config
from kmigrate.sandbox.state import BrokerNode, SandboxCluster, SandboxState

Report = Callable[[str], None]
ASK_TIMEOUT_S = 2.0


def serving(state: SandboxState, cluster: SandboxCluster, broker: BrokerNode) -> bool:
    """The broker answers on its own endpoint, listing itself and all its cluster's brokers."""
    if not is_listening(broker.port):
        return False
    endpoint = f"127.0.0.1:{broker.port}"
    config = cluster_config(state, cluster, timeout_s=ASK_TIMEOUT_S)
    try:
        with ClusterAdmin(config.model_copy(update={"bootstrap_servers": endpoint})) as admin:
            answer = admin.cluster_metadata()
    except KMigrateError:
        return False
    listed = {b.node_id for b in answer.cluster.brokers}
    return answer.answered_by == endpoint and listed >= {b.node_id for b in cluster.brokers}


def wait_ready(
    state: SandboxState, cluster: SandboxCluster, timeout: float, report: Report
) -> None:
    """Until every broker's process lives and the broker serves (see ``serving``)."""
    report(f"{cluster.name}: waiting for {len(cluster.brokers)} broker(s) to answer metadata")
    deadline = time.monotonic() + timeout
    waiting = list(cluster.brokers)
    while True:
        fail_if_dead(state.directory, cluster)
        waiting = [b for b in waiting if not serving(state, cluster, b)]
        if not waiting:
            report(f"{cluster.name}: ready at {cluster.bootstrap_servers}")
            return
        if time.monotonic() > deadline:
            log = broker_log(state.directory, cluster, waiting[0])
            raise BrokerStartError(
                f"cluster '{cluster.name}': broker(s) "
                f"{', '.join(str(b.node_id) for b in waiting)} did not answer with all "
                f"{len(cluster.brokers)} broker(s) within {timeout:g}s; see {log}",
                detail=process.failure_excerpt(log),
            )
        time.sleep(0.5)


def fail_if_dead(directory: Path, cluster: SandboxCluster) -> None:
    """BrokerStartError naming the first broker whose process is gone, with its log."""
    # These pids were just started (or checked) by `up`, so liveness is enough; right
    # after the fork /proc/<pid>/cmdline may not show the broker's arguments yet.
    for broker in cluster.brokers:
        if not process.is_running(broker.pid):
            log = broker_log(directory, cluster, broker)
            raise BrokerStartError(
                f"broker {broker.node_id} of cluster '{cluster.name}' exited during start; "
                f"see {log}",
                detail=process.failure_excerpt(log),
            )


def broker_log(directory: Path, cluster: SandboxCluster, broker: BrokerNode) -> Path:
    return broker.folder(directory / cluster.name) / "broker.log"


def wait_unregistered(
    connect: str | None,
    broker_id: int,
    *,
    timeout_s: float = 60.0,
    report: Report = lambda _: None,
) -> None:
    """Until ZooKeeper (``connect``, with chroot; None: KRaft, nothing to wait for) holds
    no /brokers/ids/``broker_id``: the registration of a stopped broker whose session
    has not expired yet."""
    if not connect:
        return
    deadline = time.monotonic() + timeout_s
    told = False
    while broker_id in Znodes.read(connect).registered:
        if not told:
            report(f"broker {broker_id}: waiting for its previous ZooKeeper session to expire")
            told = True
        if time.monotonic() > deadline:
            raise SandboxError(
                f"broker {broker_id} is still registered in ZooKeeper {timeout_s:g}s after it "
                "stopped; is another broker with that id running on this ensemble?"
            )
        time.sleep(0.5)

"""server.properties and logging config for one sandbox broker (rendered as text), and
reading and writing a properties file."""

from __future__ import annotations

from pathlib import Path

from kmigrate.sandbox.state import ADMIN_USER, SCRAM_MECHANISM, BrokerNode, SandboxCluster
from kmigrate.sandbox.tls import principal

ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"  # ZooKeeper mode's own
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
SECURE_LISTENER = "SASL_PLAINTEXT"
INTERNAL = "INTERNAL"  # the brokers' own PLAINTEXT listener (`--internal-plaintext`)


def server_properties(
    cluster: SandboxCluster,
    broker: BrokerNode,
    data_dir: Path,
    admin_password: str | None,
    tls: dict[str, str] | None = None,
) -> str:
    """The broker's server.properties: KRaft, 127.0.0.1 only, sized for one machine;
    ``tls``: the key and trust store settings of a cluster with TLS."""
    listener = cluster.listener
    replication = min(3, len(cluster.brokers))
    props: dict[str, object] = (
        _zookeeper_mode(cluster, broker, listener)
        if cluster.zookeeper_connect
        else _kraft_mode(cluster, broker, listener)
    )
    internal = cluster.internal_plaintext and cluster.zookeeper_connect
    advertised = f"{listener}://127.0.0.1:{broker.port}"
    props |= {
        "broker.rack": broker.rack,
        "advertised.listeners": advertised
        + (f",{INTERNAL}://127.0.0.1:{broker.controller_port}" if internal else ""),
        "inter.broker.listener.name": INTERNAL if internal else listener,
        "log.dirs": str(data_dir),
        "num.partitions": 1,
        "default.replication.factor": 1,
        "offsets.topic.replication.factor": replication,
        "offsets.topic.num.partitions": 8,
        "transaction.state.log.replication.factor": replication,
        "transaction.state.log.min.isr": 1,
        "transaction.state.log.num.partitions": 8,
        "share.coordinator.state.topic.replication.factor": replication,
        "share.coordinator.state.topic.min.isr": 1,
        "group.initial.rebalance.delay.ms": 0,
        "num.network.threads": 2,
        "num.io.threads": 4,
        "log.retention.check.interval.ms": 10000,
        # The cleaner looks for compactable logs every second (default 15 s): tests and
        # demos see compaction gaps without waiting.
        "log.cleaner.backoff.ms": 1000,
        # A crashed broker is fenced (its leaders move) after 4 s instead of 9 s, and a
        # broker restarted after a crash waits that long to register again.
        "broker.session.timeout.ms": 4000,
        "broker.heartbeat.interval.ms": 1000,
        "auto.create.topics.enable": "false",
        # A client that says its rack (client.rack) reads from a replica there (KIP-392),
        # as multi-zone clusters are set up to save cross-zone traffic.
        "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
    }
    if cluster.secure:
        password = admin_password or ""
        props.update(
            zookeeper_secure_properties(password, listener, internal=bool(internal))
            if cluster.zookeeper_connect
            else kraft_secure_properties(password, listener)
        )
    props.update(tls or {})
    return "".join(f"{k}={v}\n" for k, v in props.items())


def _kraft_mode(cluster: SandboxCluster, broker: BrokerNode, listener: str) -> dict[str, object]:
    listeners = [f"{listener}://127.0.0.1:{broker.port}"]
    if broker.voter:
        listeners.append(f"CONTROLLER://127.0.0.1:{broker.controller_port}")
    return {
        "process.roles": "broker,controller" if broker.voter else "broker",
        "node.id": broker.node_id,
        "controller.quorum.voters": cluster.voters,
        "listeners": ",".join(listeners),
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": f"{listener}:{listener},CONTROLLER:PLAINTEXT",
        # The active controller writes a no-op record when the metadata log is idle, every
        # 500 ms by default: a quarter of an idle sandbox broker's CPU (measured: 2.0% of a
        # core idle, 1.45% with 5 s). A sandbox's metadata changes when it is used.
        "metadata.max.idle.interval.ms": 5000,
    }


def _zookeeper_mode(
    cluster: SandboxCluster, broker: BrokerNode, listener: str
) -> dict[str, object]:
    """A Kafka 3.9 broker on ZooKeeper: its metadata lives under zookeeper.connect (whose
    chroot the broker creates), no controller quorum."""
    listeners = f"{listener}://127.0.0.1:{broker.port}"
    protocols = f"{listener}:{listener}"
    if cluster.internal_plaintext:  # the brokers' own listener, on the port KRaft would use
        listeners += f",{INTERNAL}://127.0.0.1:{broker.controller_port}"
        protocols += f",{INTERNAL}:PLAINTEXT"
    found: dict[str, object] = {
        "broker.id": broker.node_id,
        "zookeeper.connect": cluster.zookeeper_connect,
        "zookeeper.session.timeout.ms": 18000,
        "listeners": listeners,
        "listener.security.protocol.map": protocols,
    }
    if cluster.mtls:  # certificates name everyone: only brokers and the admin are super
        supers = (principal(cluster.name, "broker"), principal(cluster.name, ADMIN_USER))
        found |= {
            "authorizer.class.name": ACL_AUTHORIZER,
            "super.users": ";".join(supers),
            "allow.everyone.if.no.acl.found": "false",
        }
    elif not cluster.secure:  # ACLs can be set (and migrated), everyone allowed without one
        found |= {
            "authorizer.class.name": ACL_AUTHORIZER,
            "allow.everyone.if.no.acl.found": "true",
        }
    return found


def _scram_listener(admin_password: str, listener: str) -> dict[str, str]:
    """The one SASL listener: SCRAM-SHA-512 for clients and between brokers (they log
    in as the admin user)."""
    jaas = f'{_SCRAM_MODULE} required username="{ADMIN_USER}" password="{admin_password}";'
    return {
        "sasl.enabled.mechanisms": SCRAM_MECHANISM,
        "sasl.mechanism.inter.broker.protocol": SCRAM_MECHANISM,
        f"listener.name.{listener.lower()}.{SCRAM_MECHANISM.lower()}.sasl.jaas.config": jaas,
    }


def kraft_secure_properties(admin_password: str, listener: str = SECURE_LISTENER) -> dict[str, str]:
    """What a secure KRaft sandbox broker adds to server.properties."""
    return _scram_listener(admin_password, listener) | {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        # The controller listener is PLAINTEXT on 127.0.0.1 (KRaft controllers cannot
        # authenticate SCRAM: its credentials live in the metadata they serve), so
        # broker-to-controller requests arrive as ANONYMOUS and must be allowed.
        "super.users": f"User:{ADMIN_USER};User:ANONYMOUS",
        "allow.everyone.if.no.acl.found": "false",
    }


def zookeeper_secure_properties(
    admin_password: str, listener: str = SECURE_LISTENER, *, internal: bool = False
) -> dict[str, str]:
    """What a secure ZooKeeper-mode sandbox broker adds to server.properties (its
    listener, listener.security.protocol.map and inter.broker.listener.name name
    SASL_PLAINTEXT). Nothing is anonymous on it: only the admin is a super user. The
    admin's and the client's SCRAM credentials are in ZooKeeper before it starts.

    ``internal``: the brokers talk to each other on a PLAINTEXT listener of their own, as
    User:ANONYMOUS, so everyone is allowed where no ACL names a resource (a common
    on-premises shape: SCRAM for clients, ACLs where they matter)."""
    found = _scram_listener(admin_password, listener) | {
        "authorizer.class.name": ACL_AUTHORIZER,
        "super.users": f"User:{ADMIN_USER}",
        "allow.everyone.if.no.acl.found": "true" if internal else "false",
    }
    if internal:
        del found["sasl.mechanism.inter.broker.protocol"]
    return found


LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = WARN
"""

LOG4J1 = """\
log4j.rootLogger=INFO, out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.authorizer.logger=WARN
"""


def logging_config(kafka_version: str) -> tuple[str, str]:
    """(file name, content) of the logging config for this Kafka line, plus its JVM flag."""
    if kafka_version.startswith("3."):
        return "log4j.properties", LOG4J1
    return "log4j2.properties", LOG4J2


def logging_flag(kafka_version: str, path: Path) -> str:
    if kafka_version.startswith("3."):
        return f"-Dlog4j.configuration=file:{path}"
    return f"-Dlog4j2.configurationFile={path}"


def read_properties(path: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            found[key.strip()] = value.strip()
    return found


def write_properties(path: Path, config: dict[str, str]) -> None:
    path.write_text("".join(f"{k}={v}\n" for k, v in config.items()))

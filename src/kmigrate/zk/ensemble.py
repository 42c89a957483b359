"""Reading what the ZooKeeper move plans from: both ensembles and the Kafka cluster."""

from __future__ import annotations

import re

from kazoo.exceptions import NoNodeError

from kmigrate.config import EnsembleConfig, Settings
from kmigrate.errors import ConfigError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.zk.client import server_mode, server_version, session
from kmigrate.zk.members import parse_config
from kmigrate.zk.model import EnsembleView, KafkaOnZk

_CONNECT = re.compile(r"^[\w.-]+:\d+(,[\w.-]+:\d+)*$")


def resolve_ensemble(settings: Settings, value: str) -> EnsembleConfig:
    """An ensemble by its name in clusters.yaml, or a literal ``host:port,...`` string."""
    if value in settings.zookeeper:
        return settings.ensemble(value)
    if _CONNECT.match(value):
        return EnsembleConfig(name=value, connect=value)
    if "/" in value:
        raise ConfigError(f"'{value}': give the ensemble without a chroot (use --chroot)")
    return settings.ensemble(value)  # raises, listing the known names


def read_ensemble(config: EnsembleConfig) -> EnsembleView:
    with session(config.connect, config.name, config.timeout_s) as zk:
        raw, _ = zk.get("/zookeeper/config")
        members, version = parse_config(raw.decode())
        root = tuple(sorted(zk.get_children("/")))
    addresses = {m.node_id: m.client_address for m in members}
    modes = {i: server_mode(a) if a else None for i, a in addresses.items()}
    versions = [server_version(a) for a in addresses.values() if a]
    return EnsembleView(
        config.name,
        config.connect,
        members,
        version,
        next((v for v in versions if v), None),
        modes,
        root,
    )


def read_kafka(admin: ClusterAdmin, source: EnsembleConfig, chroot: str) -> KafkaOnZk:
    info = admin.describe_cluster()
    connects = {
        b.node_id: admin.broker_config(b.node_id).get("zookeeper.connect", "") for b in info.brokers
    }
    with session(source.connect, source.name, source.timeout_s) as zk:
        try:
            registered = tuple(sorted(int(i) for i in zk.get_children(f"{chroot}/brokers/ids")))
        except NoNodeError:
            registered = ()
    return KafkaOnZk(
        admin.cluster.name,
        tuple(b.node_id for b in info.brokers),
        connects,
        registered,
        info.controller_id,
        {b.node_id: b.host for b in info.brokers},
        info.cluster_id,
    )


def chroot_of(kafka_connects: dict[int, str]) -> str:
    """The chroot every broker's zookeeper.connect names ("" for none)."""
    chroots = {c.partition("/")[2] for c in kafka_connects.values() if c}
    if not chroots:
        raise ConfigError(
            "the cluster's brokers show no zookeeper.connect: it does not run on ZooKeeper "
            "(a KRaft cluster has nothing to move)"
        )
    if len(chroots) > 1:
        raise ConfigError(
            "the brokers use different zookeeper.connect chroots; pass --chroot explicitly"
        )
    chroot = chroots.pop()
    return f"/{chroot}".rstrip("/") if chroot else ""

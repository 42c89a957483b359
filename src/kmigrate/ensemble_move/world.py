"""What the ensemble move reads from the world: both ensembles and the Kafka cluster."""

from __future__ import annotations

import json

from kmigrate.config import EnsembleConfig
from kmigrate.ensemble_move.members import Member, parse_config
from kmigrate.ensemble_move.model import EnsembleView, KafkaOnZk
from kmigrate.errors import ConfigError, KMigrateError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.waiting import WaitPolicy
from kmigrate.zookeeper import znodes
from kmigrate.zookeeper.reconfig import dynamic_config
from kmigrate.zookeeper.session import session
from kmigrate.zookeeper.words import server_mode, server_version


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
        registered = tuple(sorted(int(i) for i in znodes.children(zk, f"{chroot}/brokers/ids")))
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


def cluster_id(connect: str, name: str, chroot: str) -> str | None:
    """The id Kafka keeps in ZooKeeper (readable while every broker is down)."""
    with session(connect, name) as zk:
        raw = znodes.data(zk, f"{chroot}/cluster/id")
    return None if raw is None else str(json.loads(raw.decode()).get("id"))


def registered_brokers(connect: str, name: str, chroot: str) -> list[int]:
    """The brokers registered under ``chroot`` (none when the ensemble does not answer)."""
    try:
        with session(connect, name) as zk:
            return sorted(int(i) for i in zk.get_children(f"{chroot}/brokers/ids"))
    except KMigrateError:
        return []


def dynamic_members(connect: str, name: str) -> tuple[tuple[Member, ...], str | None]:
    """The ensemble's members and config version, as its leader last committed them."""
    return parse_config(dynamic_config(connect, name))


def ids_in(connect: str, name: str) -> set[int]:
    """The server ids of the ensemble's current configuration (waiting out a dropped
    connection: a reconfig moves the leader)."""
    members, _ = WaitPolicy(60.0).run(lambda: dynamic_members(connect, name))
    return {m.node_id for m in members}


def each_answers_for(members: list[Member], ids: set[int], name: str) -> bool:
    """Every one of ``members``, asked directly, shows a configuration of exactly ``ids``."""
    for m in members:
        try:
            shown, _ = dynamic_members(m.client_address or "", name)
        except KMigrateError:
            return False
        if {s.node_id for s in shown} != ids:
            return False
    return True


def is_member(connect: str, name: str, node_id: int) -> bool:
    return node_id in ids_in(connect, name)

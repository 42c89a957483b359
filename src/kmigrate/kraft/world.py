"""What a KRaft conversion reads from the world: each broker's mode from its
own configuration, and ZooKeeper's `/controller`, `/migration`, `/brokers/ids` and
`/cluster/id` under the cluster's chroot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kmigrate.config import ClusterConfig
from kmigrate.errors import KMigrateError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kraft.plan import (
    MIGRATION_FLAG,
    SSL_SECRETS,
    SSL_SETTINGS,
    BrokerView,
    ClusterView,
)
from kmigrate.kraft.trust import AUTHORIZER_SETTINGS
from kmigrate.zookeeper.session import session
from kmigrate.zookeeper.znodes import children, read_json

ZK = "zk"  # a broker's modes, as `kraft status` shows them
MIGRATING = "migration"
KRAFT = "kraft"
DOWN = "down"
DIRECT_TIMEOUT_S = 3.0  # asking one broker its mode: a broker down answers "down" soon


def broker_view(admin: ClusterAdmin, broker_id: int, host: str, port: int) -> BrokerView:
    config = admin.broker_config(broker_id)
    hidden = admin.hidden_broker_configs(broker_id)
    return BrokerView(
        broker_id=broker_id,
        host=host,
        port=port,
        ibp=config.get("inter.broker.protocol.version"),
        zookeeper_connect=config.get("zookeeper.connect") or None,
        process_roles=config.get("process.roles") or None,
        migration_enabled=config.get(MIGRATION_FLAG) == "true",
        inter_broker_listener=config.get("inter.broker.listener.name"),
        protocol_map=config.get("listener.security.protocol.map"),
        log_dirs=config.get("log.dirs") or config.get("log.dir"),
        authorizer=config.get("authorizer.class.name") or None,
        authorizer_settings=tuple(
            (k, config[k]) for k in AUTHORIZER_SETTINGS if config.get(k) is not None
        ),
        inter_broker_mechanism=config.get("sasl.mechanism.inter.broker.protocol"),
        hidden=tuple(k for k in AUTHORIZER_SETTINGS if k in hidden),
        ssl_settings=tuple((k, config[k]) for k in SSL_SETTINGS if config.get(k)),
        ssl_hidden=tuple(k for k in SSL_SECRETS if k in hidden),
    )


def broker_mode(admin: ClusterAdmin, broker_id: int) -> str:
    """zk, migration, kraft, or down (it does not answer now), from its configuration."""
    try:
        config = admin.broker_config(broker_id)
    except KMigrateError:
        return DOWN
    if config.get("process.roles"):
        return KRAFT
    return MIGRATING if config.get(MIGRATION_FLAG) == "true" else ZK


def broker_mode_direct(cluster: ClusterConfig, endpoint: str, broker_id: int) -> str:
    """The broker's mode as it says itself, through a new client bootstrapped on it
    alone: while brokers of two kinds run side by side, a client that knew the broker
    before its restart may not reach it again for a long while (seen with librdkafka
    2.x), and the others' metadata may not list it."""
    config = cluster.model_copy(
        update={
            "bootstrap_servers": endpoint,
            "timeout_s": min(cluster.timeout_s, DIRECT_TIMEOUT_S),
        }
    )
    with ClusterAdmin(config) as direct:
        return broker_mode(direct, broker_id)


def read_cluster(admin: ClusterAdmin, name: str) -> tuple[ClusterView, str]:
    """The cluster as the planner needs it, and its zookeeper.connect (with chroot)."""
    brokers = tuple(
        broker_view(admin, b.node_id, b.host, b.port) for b in admin.describe_cluster().brokers
    )
    connect = next((b.zookeeper_connect for b in brokers if b.zookeeper_connect), None)
    if connect is None:
        return ClusterView(name, None, brokers, ()), ""
    znodes = Znodes.read(connect)
    return ClusterView(name, znodes.cluster_id, brokers, znodes.registered), connect


def lifted_epoch(zk_epoch: int, kraft_epoch: object) -> int | None:
    """What `/controller_epoch` must hold before a revert so that the next
    ZooKeeper-mode controller's epoch (one more) exceeds the KRaft controller's epoch;
    None when it does already, or no KRaft controller epoch is known."""
    if not isinstance(kraft_epoch, int) or isinstance(kraft_epoch, bool):
        return None
    return kraft_epoch if zk_epoch < kraft_epoch else None


@dataclass(frozen=True)
class Znodes:
    """The migration's znodes under the cluster's chroot, as read just now."""

    cluster_id: str | None
    registered: tuple[int, ...]  # /brokers/ids: brokers in ZooKeeper or migration mode
    controller: dict[str, Any] | None  # /controller: who controls (a KRaft id in migration)
    migration: dict[str, Any] | None  # /migration: the KRaft controller's progress

    @property
    def controller_id(self) -> int | None:
        return None if self.controller is None else int(self.controller.get("brokerid", -1))

    @property
    def metadata_offset(self) -> int:
        """Where the KRaft controller's dual writes reached (-1 before the first load)."""
        return (
            -1 if self.migration is None else int(self.migration.get("kraft_metadata_offset", -1))
        )

    @classmethod
    def read(cls, connect: str) -> Znodes:
        hosts, slash, chroot = connect.partition("/")
        root = f"/{chroot}".rstrip("/") if slash else ""
        with session(hosts, hosts) as zk:
            return cls(
                cluster_id=(read_json(zk, f"{root}/cluster/id") or {}).get("id"),
                registered=tuple(sorted(int(i) for i in children(zk, f"{root}/brokers/ids"))),
                controller=read_json(zk, f"{root}/controller"),
                migration=read_json(zk, f"{root}/migration"),
            )

    @staticmethod
    def lift_controller_epoch(connect: str) -> tuple[int, int] | None:
        """Before `/controller` is deleted on a revert (Kafka's KAFKA-20488): the KRaft
        controller wrote the partition states it changed with its own epoch, and the
        ZooKeeper-mode controller elected next takes `/controller_epoch` plus one; below
        the KRaft epoch, it aborts every leader election of those partitions as "written
        by another controller", and a partition whose leader must change stays offline.
        Raises `/controller_epoch` to the KRaft epoch (only while a KRaft controller
        holds `/controller`, so no broker is electing); returns (before, after) when it
        did."""
        hosts, slash, chroot = connect.partition("/")
        root = f"/{chroot}".rstrip("/") if slash else ""
        with session(hosts, hosts) as zk:
            kraft_epoch = (read_json(zk, f"{root}/controller") or {}).get("kraftControllerEpoch")
            if not zk.exists(f"{root}/controller_epoch"):
                return None
            raw, stat = zk.get(f"{root}/controller_epoch")
            lifted = lifted_epoch(int(raw.decode()), kraft_epoch)
            if lifted is None:
                return None
            zk.set(f"{root}/controller_epoch", str(lifted).encode(), version=stat.version)
            return int(raw.decode()), lifted

    @staticmethod
    def clear(connect: str, paths: tuple[str, ...] = ("controller", "migration")) -> None:
        """Delete ``paths`` under the chroot (the guide's revert: `rmr /controller` lets a
        ZooKeeper-mode broker become the controller; `rmr /migration` lets a migration
        start again later)."""
        hosts, slash, chroot = connect.partition("/")
        root = f"/{chroot}".rstrip("/") if slash else ""
        with session(hosts, hosts) as zk:
            for path in paths:
                if zk.exists(f"{root}/{path}"):
                    zk.delete(f"{root}/{path}", recursive=True)

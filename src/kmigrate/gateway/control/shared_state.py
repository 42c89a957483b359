"""The gateway's shared state in ZooKeeper: the routing table (one znode, changed with a
compare-and-set) and the live instances (an ephemeral znode each).

    <path>/routes                 JSON routing table (kmigrate.gateway.control.routes)
    <path>/instances/<id>         {"host": ..., "port": ...}, ephemeral
    <path>/dis-secret             the key DIS cursors are signed with
    <path>/marks/<id>             the high watermarks an instance saw (control.marks)
    <path>/fences/<topic>:<partition>:<epoch>/<id>
                                  an instance's acknowledgement of a write fence, ephemeral
    <path>/applied/<id>           the routing table version an instance serves, ephemeral

Every instance watches both, so a route change or an instance that dies reaches all of
them within ZooKeeper's notification time (well under a second on a healthy ensemble).
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace

from kmigrate.config import Settings
from kmigrate.errors import ConfigError, ConflictError
from kmigrate.gateway.control.marks import merged
from kmigrate.gateway.control.placement import Instance
from kmigrate.gateway.control.routes import RoutingTable, parse_table
from kmigrate.zookeeper import (
    BadVersionError,
    KazooClient,
    KazooState,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    resolve_ensemble,
    session_client,
)

log = logging.getLogger("kmigrate.gateway.registry")  # as before the move (logs)
APPLIED_POLL_S = 0.1


def split_routes_address(value: str) -> tuple[str, str]:
    """``host:port,host:port/path`` → (connect, path); the path defaults to
    /kmigrate-gateway."""
    connect, slash, path = value.partition("/")
    return connect, f"/{path}".rstrip("/") if slash and path else "/kmigrate-gateway"


class Registry:
    def __init__(self, connect: str, path: str, name: str, timeout_s: float = 6.0) -> None:
        self.path = path.rstrip("/")
        self.name = name
        self.zk: KazooClient = session_client(connect, name, timeout_s)
        self._mine: Instance | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def routes_path(self) -> str:
        return f"{self.path}/routes"

    @property
    def instances_path(self) -> str:
        return f"{self.path}/instances"

    def close(self) -> None:
        """End the session (once); calls blocked on an unreachable ensemble fail at once."""
        if self._closed:
            return
        self._closed = True
        self._mine = None  # stopping ends the session on purpose: do not register again
        self.zk.stop()
        self.zk.close()

    # ------------------------------------------------------------ routes

    def read_routes(self) -> RoutingTable:
        self.zk.ensure_path(self.routes_path)
        raw, stat = self.zk.get(self.routes_path)
        return parse_table(raw, stat.version)

    def read_routes_now(self) -> RoutingTable:
        """The table as the ensemble's leader has it (synced first: not a lagging
        server's copy)."""
        self.zk.ensure_path(self.routes_path)
        self.zk.sync(self.routes_path)
        return self.read_routes()

    def write_routes(self, table: RoutingTable) -> RoutingTable:
        """``table`` stored, if the stored one is still the version it was read at."""
        try:
            stat = self.zk.set(self.routes_path, table.to_json(), version=table.version)
        except BadVersionError:
            raise ConflictError(
                "the gateway's routing table changed while this change was made; run the "
                "command again"
            ) from None
        return replace(table, version=stat.version)

    def change_routes(
        self, change: Callable[[RoutingTable], RoutingTable], attempts: int = 5
    ) -> RoutingTable:
        """The stored table passed through ``change`` and written back with a
        compare-and-set, read again and retried when another writer came first."""
        for attempt in range(attempts):
            table = self.read_routes()
            try:
                return self.write_routes(change(table))
            except ConflictError:
                if attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable")

    def watch_routes(self, changed: Callable[[RoutingTable], None]) -> None:
        """Call ``changed`` with the table now (read after a sync: not a stale server's
        copy) and with every new version."""
        self.zk.ensure_path(self.routes_path)
        self.zk.sync(self.routes_path)

        def on_data(raw: bytes | None, stat: object) -> None:
            version = getattr(stat, "version", -1)
            try:
                changed(parse_table(raw, version))
            except Exception:  # a bad table is logged; the last good one stays
                log.exception("ignoring an unreadable routing table (version %s)", version)

        self.zk.DataWatch(self.routes_path, on_data)

    def _put(self, node: str, raw: bytes, ephemeral: bool = False) -> None:
        """``node`` holds ``raw``, made (with its parents) when it is not there yet."""
        try:
            self.zk.set(node, raw)
        except NoNodeError:
            with contextlib.suppress(NodeExistsError):
                self.zk.create(node, raw, ephemeral=ephemeral, makepath=True)
                return
            self.zk.set(node, raw)  # made by another session meanwhile

    def acknowledge_routes(self, node_id: int, version: int) -> None:
        """That instance ``node_id`` serves routing table ``version`` from now on."""
        self._put(f"{self.path}/applied/{node_id}", str(version).encode(), ephemeral=True)

    def routes_applied(self) -> dict[int, int]:
        """Instance id -> the routing table version it said it serves."""
        base = f"{self.path}/applied"
        try:
            children = self.zk.get_children(base)
        except NoNodeError:
            return {}
        found = {}
        for child in children:
            with contextlib.suppress(NoNodeError, ValueError):
                found[int(child)] = int(self.zk.get(f"{base}/{child}")[0])
        return found

    def wait_applied(self, version: int, timeout_s: float) -> list[int]:
        """Wait until every live instance serves routing table ``version`` or a later
        one; the ids of those that did not within ``timeout_s`` (none: all did)."""
        deadline = time.monotonic() + timeout_s
        while True:
            applied = self.routes_applied()
            behind = [i.node_id for i in self.instances() if applied.get(i.node_id, -1) < version]
            if not behind or time.monotonic() >= deadline:
                return behind
            time.sleep(APPLIED_POLL_S)

    # ------------------------------------------------------------ DIS cursors

    def shared_secret(self) -> bytes:
        """The key every instance signs DIS cursors with (made once, first writer wins)."""
        node = f"{self.path}/dis-secret"
        with contextlib.suppress(NodeExistsError):
            self.zk.create(node, secrets.token_bytes(32), makepath=True)
        raw, _ = self.zk.get(node)
        return bytes(raw)

    # ------------------------------------------------------------ marks

    def store_marks(self, node_id: int, raw: bytes) -> None:
        self._put(f"{self.path}/marks/{node_id}", raw)

    def read_marks(self) -> dict[tuple[str, str, int], int]:
        base = f"{self.path}/marks"
        try:
            children = self.zk.get_children(base)
        except NoNodeError:
            return {}
        stored = []
        for child in children:
            with contextlib.suppress(NoNodeError):
                stored.append(self.zk.get(f"{base}/{child}")[0])
        return merged(stored)

    # ------------------------------------------------------------ fences

    def _fence_path(self, topic: str, partition: int, epoch: int) -> str:
        # ':' never occurs in a Kafka topic name
        return f"{self.path}/fences/{topic}:{partition}:{epoch}"

    def prepare_fences(self, topic: str, epochs: Mapping[int, int]) -> None:
        """Make the folders the instances acknowledge fences in (partition -> epoch)
        before the fences are written: each acknowledgement is then one write."""
        for partition, epoch in epochs.items():
            self.zk.ensure_path(self._fence_path(topic, partition, epoch))

    @contextlib.contextmanager
    def fence_watch(self, topic: str, epochs: Mapping[int, int]) -> Iterator[threading.Event]:
        """An event set whenever an acknowledgement of these fences (partition -> epoch)
        or the set of live instances changes, while the block runs."""
        changed = threading.Event()
        watching = True

        def seen(_children: list[str]) -> bool:
            changed.set()
            return watching  # False ends the watch

        paths = [self._fence_path(topic, p, e) for p, e in epochs.items()]
        for path in [*paths, self.instances_path]:
            self.zk.ensure_path(path)
            self.zk.ChildrenWatch(path, seen)
        try:
            yield changed
        finally:
            watching = False

    def acknowledge_fence(self, topic: str, partition: int, epoch: int, node_id: int) -> None:
        with contextlib.suppress(NodeExistsError):
            self.zk.create(
                f"{self._fence_path(topic, partition, epoch)}/{node_id}",
                ephemeral=True,
                makepath=True,
            )

    def fence_acknowledgements(self, topic: str, partition: int, epoch: int) -> set[int]:
        try:
            found = self.zk.get_children(self._fence_path(topic, partition, epoch))
        except NoNodeError:
            return set()
        return {int(c) for c in found if c.isdigit()}

    def clear_fences(self, topic: str, partition: int) -> None:
        """Forget every acknowledgement of ``topic[partition]``'s fences."""
        try:
            children = self.zk.get_children(f"{self.path}/fences")
        except NoNodeError:
            return
        for child in children:
            if child.rsplit(":", 2)[:2] == [topic, str(partition)]:
                with contextlib.suppress(NoNodeError, NotEmptyError):
                    self.zk.delete(f"{self.path}/fences/{child}", recursive=True)

    # ------------------------------------------------------------ instances

    def register(self, instance: Instance) -> None:
        """This process's ephemeral node; refused if the id is taken by a live one."""
        self.zk.ensure_path(self.instances_path)
        body = json.dumps({"host": instance.host, "port": instance.port}).encode()
        try:
            self.zk.create(f"{self.instances_path}/{instance.node_id}", body, ephemeral=True)
        except NodeExistsError:
            raise ConflictError(
                f"gateway instance id {instance.node_id} is already registered in "
                f"{self.name}{self.path}; pick another --id"
            ) from None
        self._mine = instance
        self.zk.add_listener(self._on_state)

    def _on_state(self, state: str) -> None:
        if state == KazooState.LOST and self._mine is not None:
            # The session expired (a long pause): register again once reconnected.
            self.zk.handler.spawn(self._register_again)

    def _register_again(self) -> None:
        mine = self._mine
        if mine is None:
            return
        body = json.dumps({"host": mine.host, "port": mine.port}).encode()
        try:
            self.zk.create(f"{self.instances_path}/{mine.node_id}", body, ephemeral=True)
            log.info("registered gateway instance %s again after a lost session", mine.node_id)
        except NodeExistsError:
            pass
        except Exception:
            log.exception("could not register gateway instance %s again", mine.node_id)

    def instances(self) -> list[Instance]:
        self.zk.ensure_path(self.instances_path)
        return sorted(
            i
            for i in (self._instance(c) for c in self.zk.get_children(self.instances_path))
            if i is not None
        )

    def _instance(self, child: str) -> Instance | None:
        try:
            raw, _ = self.zk.get(f"{self.instances_path}/{child}")
            body = json.loads(raw)
            return Instance(int(child), str(body["host"]), int(body["port"]))
        except (NoNodeError, ValueError, KeyError):
            return None

    def watch_instances(self, changed: Callable[[list[Instance]], None]) -> None:
        self.zk.ensure_path(self.instances_path)

        def on_children(_children: list[str]) -> None:
            changed(self.instances())

        self.zk.ChildrenWatch(self.instances_path, on_children)


def configured(settings: Settings) -> tuple[Registry, str]:
    """The registry of the gateway clusters.yaml configures, and its group home."""
    config = settings.gateway
    if config is None:
        raise ConfigError(
            "no gateway configured: add a 'gateway:' section to clusters.yaml (group_home, "
            "zookeeper)"
        )
    ensemble = resolve_ensemble(settings, config.zookeeper)
    registry = Registry(ensemble.connect, config.path, ensemble.name, config.session_timeout_s)
    return registry, config.group_home


@dataclass(frozen=True)
class Setup:
    """Where a command finds the gateway: its ZooKeeper ensemble and path, its group
    home, and the timer settings of clusters.yaml's 'gateway:' section."""

    connect: str
    path: str
    where: str  # the ensemble's name, for messages
    group_home: str | None
    timeout_s: float
    age_every_s: float = 60.0

    def registry(self) -> Registry:
        return Registry(self.connect, self.path, self.where, self.timeout_s)

    def home(self) -> str:
        """The group home, refused (one line) when none is named."""
        if self.group_home is None:
            raise ConfigError("name the group home cluster in clusters.yaml 'gateway: group_home:'")
        return self.group_home


def setup_of(settings: Settings, routes: str | None, group_home: str | None = None) -> Setup:
    """The gateway clusters.yaml configures, or the one at ``routes``
    (``ZK_CONNECT[/PATH]``, a --routes option), its group home overridden by
    ``group_home``."""
    config = settings.gateway
    if routes:
        head, path = split_routes_address(routes)
        ensemble = resolve_ensemble(settings, head)
        timeout = config.session_timeout_s if config else 6.0
    elif config is not None:
        ensemble, path, timeout = (
            resolve_ensemble(settings, config.zookeeper),
            config.path,
            config.session_timeout_s,
        )
    else:
        raise ConfigError(
            "no gateway configured: add a 'gateway:' section to clusters.yaml (group_home, "
            "zookeeper) or pass --routes ZK_CONNECT/PATH"
        )
    home = group_home or (config.group_home if config else None)
    age = config.age_every_s if config else 60.0
    return Setup(ensemble.connect, path, ensemble.name, home, timeout, age)

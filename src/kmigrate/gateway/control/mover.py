"""Moving partitions between backend clusters behind a running gateway.

Smooth migration (seed 000, the origin healthy), without a guessed migration offset:

1. the target topic exists with the origin's partition count (created like it if not);
2. each partition's record is written ``Migrating`` with a new epoch (one
   compare-and-set): every instance parks that partition's new writes;
3. wait until every registered instance acknowledged the fence with no write of the
   partition in flight (an instance that dies drops out of the registry with its session),
   then until no open transaction on the origin covers the partitions (a move never
   splits a transaction: kmigrate.gateway.control.transactions), each wait at most the
   fence timeout;
4. read the origin's end offset (``end_offset``), the target's (``target_base``), and the
   origin's last sequence number per idempotent producer (so a retry of a write whose
   answer was lost is not written again on the target);
5. flip: the record becomes ``Migrated`` and the route points at the target (one
   compare-and-set); parked writes go on to the target.

If the fence is not acknowledged in time (or a transaction stays open) the records are
taken back, the writes go on to the origin, and nothing moved. Running the command again
after it was killed finishes the migration with a new epoch.

Failover migration (the origin down): no fence (writes to the origin fail anyway) and
no reading of the origin; ``end_offset`` is the highest high watermark any instance
recorded for the partition (kmigrate.gateway.control.marks), and the record is written
``Migrated`` at once. Records the origin acknowledged after that mark are the
unavailable range the aging timer names once the origin answers again.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from kmigrate.config import Settings
from kmigrate.errors import ConfigError, ConflictError
from kmigrate.gateway.control.fence_reads import Reads
from kmigrate.gateway.control.partition_moves import (
    Migration,
    Mode,
    Status,
    begin,
    check_start,
    writers_key,
)
from kmigrate.gateway.control.routes import RoutingTable, TopicRoute
from kmigrate.gateway.control.shared_state import Registry
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.cluster import TopicInfo
from kmigrate.zookeeper import NoNodeError

FENCE_TIMEOUT_S = 20.0
# The acknowledgements are watched; this is only how long a lost notification can cost.
ACKNOWLEDGED_POLL_S = 0.1
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Moved:
    topic: str
    partition: int
    origin: str
    target: str
    end_offset: int
    target_base: int
    epoch: int
    writers: int  # idempotent producers whose last sequence was carried over
    fence_ms: int  # from the fence written to the flip
    # where the fence's time went, in order: every instance holding the writes, open
    # transactions ended, the caller's step (a guided promote's last records), the
    # offsets and producer states read, the flip written
    fence_steps_ms: Mapping[str, int] = field(default_factory=dict)


def smooth(
    settings: Settings,
    registry: Registry,
    group_home: str,
    topic: str,
    partitions: Iterable[int],
    target: str,
    progress: Progress = lambda _m: None,
    fence_timeout_s: float = FENCE_TIMEOUT_S,
    keep_origin: bool = False,
    ignore_origin: bool = False,
    while_fenced: Callable[[], None] = lambda: None,
) -> list[Moved]:
    """``while_fenced`` runs once every instance holds the writes and before the
    origin's end offsets are read (a guided promote lets the mirror copy the last
    records there)."""
    chosen = sorted(set(partitions))
    route, origins = _where(settings, registry, topic, chosen, target)
    with ClusterAdmin(settings.cluster(route.cluster)) as admin:
        info = admin.describe_topic(topic)
    count = info.partition_count
    check_start(topic, chosen, origins, _finished_only(route.migrations, target), target, count)
    _ensure_target(settings, info, route.cluster, target, progress)

    reads = Reads(settings, origins.values(), target)
    try:
        reads.warm(topic, chosen)
        return _fenced_move(
            reads, registry, group_home, topic, chosen, origins, target, count,
            _Options(progress, fence_timeout_s, keep_origin, ignore_origin, while_fenced),
        )  # fmt: skip
    finally:
        reads.close()


@dataclass(frozen=True)
class _Options:
    progress: Progress
    fence_timeout_s: float
    keep_origin: bool
    ignore_origin: bool
    while_fenced: Callable[[], None]


def _fenced_move(
    reads: Reads,
    registry: Registry,
    group_home: str,
    topic: str,
    chosen: list[int],
    origins: Mapping[int, str],
    target: str,
    count: int,
    o: _Options,
) -> list[Moved]:
    """Steps 2-5 of the module's smooth migration, its reads connected already."""
    progress, keep_origin, ignore_origin = o.progress, o.keep_origin, o.ignore_origin
    now = int(time.time() * 1000)
    epochs: dict[int, int] = {}

    def fence(t: RoutingTable) -> RoutingTable:
        for p in chosen:
            epochs[p] = _next_epoch(t, topic, p)
            record = begin(
                origins[p], target, epochs[p], Mode.SMOOTH, ignore_origin, now, keep_origin
            )
            t = _appended(t, topic, p, record)
        return t

    table = registry.read_routes()
    registry.prepare_fences(topic, {p: _next_epoch(table, topic, p) for p in chosen})
    fenced_at = time.monotonic()
    _change(registry, fence)
    progress(f"fenced writes of {_names(topic, chosen)}; waiting for every gateway instance")
    steps = Stopwatch(fenced_at)
    try:
        _wait_acknowledged(registry, topic, epochs, o.fence_timeout_s)
        steps.lap("acknowledged")
        reads.transactions_closed(origins, topic, o.fence_timeout_s, progress)
        steps.lap("transactions")
        o.while_fenced()
        steps.lap("while fenced")
        ends, bases, writers = reads.together(
            lambda: _offsets(reads, topic, origins, chosen),
            lambda: reads.ends(target, topic, chosen),
            lambda: _writers(reads, registry, group_home, topic, origins),
        )
        steps.lap("offsets and producers")
        _change(registry, lambda t: _flipped(t, topic, count, epochs, ends, bases, writers))
        steps.lap("flip")
    except BaseException:
        # Any failure (or Ctrl-C) before the flip: writes go on to the origin. Taking
        # back only an unflipped record of this epoch is harmless after a flip.
        try:
            _change(registry, lambda t: _unfenced(t, topic, epochs))
            progress("writes released to the origin; nothing moved")
        except Exception as exc:  # ZooKeeper away too: the instances keep the fence
            progress(f"could not take the fence back ({exc}); run the same command again")
        raise
    took = int((time.monotonic() - fenced_at) * 1000)
    for p in chosen:
        registry.clear_fences(topic, p)
    return [
        Moved(
            topic,
            p,
            origins[p],
            target,
            ends[p],
            bases[p],
            epochs[p],
            len(writers.get(p, {})),
            took,
            dict(steps.laps),
        )
        for p in chosen
    ]


class Stopwatch:
    """Laps since ``began`` (time.monotonic()), each named, in milliseconds."""

    def __init__(self, began: float) -> None:
        self._last = began
        self.laps: tuple[tuple[str, int], ...] = ()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.laps += ((name, round((now - self._last) * 1000)),)
        self._last = now


def failover(
    settings: Settings,
    registry: Registry,
    group_home: str,
    topic: str,
    partitions: Iterable[int],
    target: str,
    ignore_origin: bool = False,
    keep_origin: bool = False,
    progress: Progress = lambda _m: None,
) -> list[Moved]:
    chosen = sorted(set(partitions))
    route, origins = _where(settings, registry, topic, chosen, target)
    for origin in sorted(set(origins.values())):
        if answers(settings.cluster(origin).bootstrap_servers):
            raise ConflictError(
                f"cluster '{origin}' answers; a failover migration is for an origin that is "
                "down (use --mode smooth, which loses nothing)"
            )
    # The group home holds the topic (for committed offsets) with its partition count.
    with ClusterAdmin(settings.cluster(group_home)) as admin:
        info = admin.describe_topic(topic)
    count = info.partition_count
    check_start(topic, chosen, origins, _finished_only(route.migrations, target), target, count)
    marks = registry.read_marks()
    ends = {}
    for p in chosen:
        mark = marks.get((origins[p], topic, p))
        if mark is None:
            raise ConflictError(
                f"no gateway instance recorded a high watermark of {topic}[{p}] on "
                f"'{origins[p]}'; its migration offset is unknown"
            )
        ends[p] = mark
    if target != group_home:
        _ensure_target(settings, info, group_home, target, progress)
    bases = _ends_on(settings, target, topic, chosen)
    now = int(time.time() * 1000)
    epochs: dict[int, int] = {}

    def flip(t: RoutingTable) -> RoutingTable:
        for p in chosen:
            epochs[p] = _next_epoch(t, topic, p)
            record = Migration(
                origins[p], target, Status.MIGRATED, epochs[p], Mode.FAILOVER, ends[p],
                bases[p], ignore_origin, keep_origin, {}, now, now,
            )  # fmt: skip
            t = _appended(t, topic, p, record)
        return t.normalized(topic, count)

    _change(registry, flip)
    return [Moved(topic, p, origins[p], target, ends[p], bases[p], epochs[p], 0, 0) for p in chosen]


def _flipped(
    table: RoutingTable,
    topic: str,
    count: int,
    epochs: Mapping[int, int],
    ends: Mapping[int, int],
    bases: Mapping[int, int],
    writers: Mapping[int, Mapping[str, int]],
) -> RoutingTable:
    """``table`` with this command's fenced records Migrated and routed to the target."""
    now = int(time.time() * 1000)
    for p, epoch in epochs.items():
        current = table.topics[topic].migrating(p)
        if current is None or current.epoch != epoch:
            raise ConflictError(
                f"{topic}[{p}]'s migration record changed while it was fenced; "
                "run the command again"
            )
        done = replace(
            current,
            status=Status.MIGRATED,
            end_offset=ends[p],
            target_base=bases[p],
            writers=dict(writers.get(p, {})),
            changed_ms=now,
        )
        table = table.with_migration(topic, p, done, replace_last=True)
    return table.normalized(topic, count)


def _where(
    settings: Settings, registry: Registry, topic: str, chosen: list[int], target: str
) -> tuple[TopicRoute, dict[int, str]]:
    """The topic's route and where each chosen partition is written now."""
    route = registry.read_routes().topics.get(topic)
    if route is None:
        raise ConfigError(f"topic '{topic}' is not routed by the gateway; route it first")
    settings.cluster(target)  # a cluster clusters.yaml knows
    return route, {p: _origin(route.migrations.get(p, ()), route.cluster_of(p)) for p in chosen}


def _next_epoch(table: RoutingTable, topic: str, partition: int) -> int:
    chain = table.topics[topic].migrations.get(partition, ())
    return (chain[-1].epoch + 1) if chain else 1


def _appended(table: RoutingTable, topic: str, partition: int, record: Migration) -> RoutingTable:
    """``record`` as the partition's newest migration, in place of an unfinished one."""
    chain = table.topics[topic].migrations.get(partition, ())
    resuming = bool(chain) and not chain[-1].flipped
    return table.with_migration(topic, partition, record, replace_last=resuming)


def answers(bootstrap: str, timeout_s: float = 1.0) -> bool:
    """Whether any bootstrap server accepts a TCP connection."""
    for server in bootstrap.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
                return True
        except (OSError, ValueError):
            continue
    return False


def _origin(chain: Iterable[Migration], current: str) -> str:
    """Where the partition is written now (an unfinished migration's origin)."""
    pending = [m for m in chain if not m.flipped]
    return pending[-1].origin if pending else current


def _finished_only(
    migrations: Mapping[int, tuple[Migration, ...]], target: str
) -> dict[int, tuple[Migration, ...]]:
    """The chains as check_start must judge them: an unfinished migration to the same
    target is resumed (not refused)."""
    return {
        p: chain[:-1] if chain and not chain[-1].flipped and chain[-1].target == target else chain
        for p, chain in migrations.items()
    }


def _ensure_target(
    settings: Settings, info: TopicInfo, origin: str, target: str, progress: Progress
) -> None:
    """The topic on ``target`` with the origin's partition count (created like it)."""
    with ClusterAdmin(settings.cluster(target)) as admin:
        found = admin.describe_topics_if_present([info.name])
        if not found:
            admin.create_topic_like(info)
            progress(f"created topic {info.name} on {target} like on {origin}")
        elif len(found[0].partitions) != info.partition_count:
            raise ConflictError(
                f"topic '{info.name}' has {len(found[0].partitions)} partition(s) on {target} "
                f"and {info.partition_count} on {origin}; make them equal"
            )


def _change(registry: Registry, change: Callable[[RoutingTable], RoutingTable]) -> RoutingTable:
    """``change`` applied to the stored table with a compare-and-set, read again on a
    concurrent change (a few times)."""
    for attempt in range(5):
        try:
            return registry.write_routes(change(registry.read_routes()))
        except ConflictError:
            if attempt == 4:
                raise
            time.sleep(0.1)
    raise AssertionError("unreachable")


def _unfenced(table: RoutingTable, topic: str, epochs: Mapping[int, int]) -> RoutingTable:
    route = table.topics[topic]
    chains = dict(route.migrations)
    for p, epoch in epochs.items():
        chain = chains.get(p, ())
        if chain and not chain[-1].flipped and chain[-1].epoch == epoch:
            chains[p] = chain[:-1]
            if not chains[p]:
                del chains[p]
    return replace(table, topics={**table.topics, topic: replace(route, migrations=chains)})


def _wait_acknowledged(
    registry: Registry, topic: str, epochs: Mapping[int, int], timeout_s: float
) -> None:
    """Until every live instance acknowledged every partition's fence: looked at again
    whenever ZooKeeper says an acknowledgement or an instance came or went (watches),
    at least every ACKNOWLEDGED_POLL_S."""
    deadline = time.monotonic() + timeout_s
    with registry.fence_watch(topic, epochs) as changed:
        while True:
            changed.clear()
            live = {i.node_id for i in registry.instances()}
            missing = {
                p: sorted(live - registry.fence_acknowledgements(topic, p, e))
                for p, e in epochs.items()
            }
            missing = {p: m for p, m in missing.items() if m}
            if not missing:
                return
            if time.monotonic() > deadline:
                p, ids = next(iter(missing.items()))
                raise ConflictError(
                    f"gateway instance(s) {', '.join(map(str, ids))} did not acknowledge the "
                    f"write fence of {topic}[{p}] within {timeout_s:g}s (see their logs)"
                )
            changed.wait(ACKNOWLEDGED_POLL_S)


def _keys(topic: str, partitions: Iterable[int]) -> list[tuple[str, int]]:
    return [(topic, p) for p in partitions]


def _offsets(
    reads: Reads, topic: str, origins: Mapping[int, str], chosen: list[int]
) -> dict[int, int]:
    ends: dict[int, int] = {}
    for name in set(origins.values()):
        ends |= reads.ends(name, topic, [p for p in chosen if origins[p] == name])
    return ends


def _ends_on(settings: Settings, cluster: str, topic: str, partitions: list[int]) -> dict[int, int]:
    """Each partition's end offset (high watermark) on ``cluster``."""
    with ClusterAdmin(settings.cluster(cluster)) as admin:
        found = admin.partition_offsets(_keys(topic, partitions), "latest")
    return {p: o for (_, p), o in found.items()}


def _writers(
    reads: Reads,
    registry: Registry,
    group_home: str,
    topic: str,
    origins: Mapping[int, str],
) -> dict[int, dict[str, int]]:
    """Per partition, the last sequence number its origin holds of each idempotent client
    producer, keyed as the client knows the producer (its id on the group home)."""
    found: dict[int, dict[str, int]] = {}
    for name in set(origins.values()):
        mine = [p for p, o in origins.items() if o == name]
        states = reads.producers(name, topic, mine)
        clients = (lambda key: key) if name == group_home else _client_keys(registry, name)
        for p, producers in states.items():
            found[p] = {
                client: seq
                for (pid, epoch), seq in producers.items()
                if (client := clients(writers_key(pid, epoch))) is not None
            }
    return found


def _client_keys(registry: Registry, cluster: str) -> Callable[[str], str | None]:
    """backend "id:epoch" on ``cluster`` -> the client's "id:epoch" (the gateway's
    producer id translations in ZooKeeper)."""
    base = f"{registry.path}/producers"
    inverse: dict[str, str] = {}
    try:
        producers = registry.zk.get_children(base)
    except NoNodeError:
        producers = []
    for producer in producers:
        try:
            raw, _ = registry.zk.get(f"{base}/{producer}/{cluster}")
        except NoNodeError:
            continue
        pid, _, epoch = producer.rpartition("-")
        inverse[raw.decode()] = writers_key(int(pid), int(epoch))
    return inverse.get


def _names(topic: str, partitions: Iterable[int]) -> str:
    return f"{topic}[{','.join(map(str, partitions))}]"

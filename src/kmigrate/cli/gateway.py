"""`kmigrate gateway start | status | route | migrate | migrations | shield`: the
Kafka-protocol gateway and the partitions it moves between backends."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, int_list, json_option, pass_app
from kmigrate.config import Settings
from kmigrate.errors import ConfigError, ConflictError, KMigrateError
from kmigrate.gateway import mover
from kmigrate.gateway.mover import FENCE_TIMEOUT_S
from kmigrate.gateway.placement import Instance
from kmigrate.gateway.registry import Registry, split_routes_address
from kmigrate.gateway.report import migrations_json
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.store import store_for
from kmigrate.store.migrations import record_event
from kmigrate.zk.ensemble import resolve_ensemble

AUDIT = "gateway"  # the audit log's name for the gateway's changes
routes_option = click.option(
    "--routes",
    metavar="ZK_CONNECT[/PATH]",
    help="Where the routing table and instances live (default: clusters.yaml 'gateway:').",
)


@dataclass(frozen=True)
class Setup:
    connect: str
    path: str
    where: str  # the ensemble's name, for messages
    group_home: str | None
    timeout_s: float
    age_every_s: float = 60.0

    def registry(self) -> Registry:
        return Registry(self.connect, self.path, self.where, self.timeout_s)


def _setup(settings: Settings, routes: str | None, group_home: str | None = None) -> Setup:
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


@click.group("gateway")
def group() -> None:
    """A Kafka-protocol endpoint that routes each topic partition to a backend cluster."""


@group.command("start")
@click.option("--listen", default="127.0.0.1:9092", show_default=True, metavar="HOST:PORT")
@routes_option
@click.option("--group-home", metavar="CLUSTER", help="Cluster whose coordinators serve groups.")
@click.option(
    "--id",
    "node_id",
    type=click.IntRange(0),
    default=1,
    show_default=True,
    help="This instance's broker id, unique in the gateway.",
)
@click.option(
    "--age-every",
    type=click.FloatRange(min=0.1),
    metavar="SECONDS",
    help="Period of the aging timer (default: clusters.yaml 'gateway: age_every_s:', 60).",
)
@click.option(
    "--http-listen",
    metavar="HOST:PORT",
    help="Also serve the DIS stream HTTP API (put records, cursors, get records) here.",
)
@click.option("--detach", is_flag=True, help="Run in the background; print its pid and log.")
@pass_app
def start(
    app: AppContext,
    listen: str,
    routes: str | None,
    group_home: str | None,
    node_id: int,
    age_every: float | None,
    http_listen: str | None,
    detach: bool,
) -> None:
    """Run one gateway instance until SIGTERM or Ctrl-C."""
    settings = app.settings
    setup = _setup(settings, routes, group_home)
    if setup.group_home is None:
        raise ConfigError("name the group home cluster: --group-home or 'gateway: group_home:'")
    settings.cluster(setup.group_home)
    host, port = _host_port(listen, "--listen")
    http = _host_port(http_listen, "--http-listen") if http_listen else None
    me = Instance(node_id, host, port)
    if detach:
        _detach(app, setup, me, http_listen)
        return
    _log_to_stderr()
    from kmigrate.gateway.server import run_instance  # the server's stack, only to serve

    registry = setup.registry()
    clusters = [settings.cluster(n) for n in settings.clusters]
    render.progress(
        f"gateway instance {node_id} on {listen}: backends {', '.join(settings.clusters)}; "
        f"group home {setup.group_home}; routes in {setup.where}{setup.path}"
    )
    try:
        _run(
            lambda stop: run_instance(
                setup.where,
                me,
                clusters,
                setup.group_home,
                registry,
                stop=stop,
                age_every_s=age_every or setup.age_every_s,
                http=http,
                audit=_auditor(settings),
            )
        )
    finally:
        registry.close()


def _auditor(settings: Settings) -> Callable[[str, list[str], str], None]:
    """The aging timer's changes into the metadata store's audit log, best effort (an
    instance keeps serving when the store is away; its log has every change too)."""

    def audit(action: str, subjects: list[str], detail: str) -> None:
        try:
            record_event(store_for(settings), AUDIT, action, subjects, "done", detail)
        except Exception as exc:
            logging.getLogger("kmigrate.gateway").info("audit log not written: %s", exc)

    return audit


def _host_port(value: str, option: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"{option} {value}: give HOST:PORT")
    return host, int(port)


def _log_to_stderr() -> None:
    """A long-running server: its own events at INFO, with times, on stderr."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("kmigrate.gateway")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def _run(main: object) -> None:
    """Run the instance on uvloop where it is installed; SIGTERM and SIGINT stop it."""

    async def body() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await main(stop)  # type: ignore[operator]

    try:
        import uvloop

        uvloop.run(body())
    except ImportError:
        asyncio.run(body())


def _detach(app: AppContext, setup: Setup, me: Instance, http_listen: str | None) -> None:
    folder = app.settings.path.parent if app.settings.path else Path.cwd()
    log = folder / f"gateway-{me.node_id}.log"
    args = [sys.executable, "-m", "kmigrate"]
    if app.settings.path:
        args += ["--config", str(app.settings.path)]
    args += [
        "gateway",
        "start",
        "--listen",
        f"{me.host}:{me.port}",
        "--id",
        str(me.node_id),
        "--routes",
        f"{setup.connect}{setup.path}",
        "--group-home",
        str(setup.group_home),
    ]
    if http_listen:
        args += ["--http-listen", http_listen]
    with open(log, "ab") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    registry = setup.registry()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                last = log.read_text().strip().splitlines()[-1:] or ["no output"]
                raise ConflictError(f"the gateway instance exited: {last[0]} (log: {log})")
            if any(i.node_id == me.node_id for i in registry.instances()):
                render.progress(f"gateway instance {me.node_id} runs as pid {proc.pid}; log: {log}")
                return
            time.sleep(0.2)
    finally:
        registry.close()
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    raise ConflictError(f"the gateway instance did not register within 60s (log: {log})")


@group.command("status")
@routes_option
@json_option
@pass_app
def status(app: AppContext, routes: str | None, as_json: bool) -> None:
    """The live instances and the routing table."""
    setup = _setup(app.settings, routes)
    registry = setup.registry()
    try:
        instances, table = registry.instances(), registry.read_routes()
    finally:
        registry.close()
    body = {
        "instances": [{"id": i.node_id, "host": i.host, "port": i.port} for i in instances],
        "routes": {
            t: {"cluster": r.cluster, "partitions": {str(p): c for p, c in r.partitions.items()}}
            for t, r in sorted(table.topics.items())
        },
        "routes_version": table.version,
    }
    if as_json:
        render.print_json(body)
        return
    render.table(
        "instances", ["id", "address"], [(i.node_id, f"{i.host}:{i.port}") for i in instances]
    )
    render.table(
        "routes",
        ["topic", "cluster", "partition exceptions"],
        [
            (t, r.cluster, ", ".join(f"{p}->{c}" for p, c in sorted(r.partitions.items())))
            for t, r in sorted(table.topics.items())
        ],
    )


@group.group("route")
def route() -> None:
    """Change the routing table (compare-and-set; every instance follows in a second)."""


@route.command("set")
@click.option("--topic", required=True)
@click.option("--cluster", required=True, metavar="CLUSTER")
@click.option("--partitions", metavar="P,P,...", help="Only these partitions (exceptions).")
@routes_option
@json_option
@pass_app
def route_set(
    app: AppContext,
    topic: str,
    cluster: str,
    partitions: str | None,
    routes: str | None,
    as_json: bool,
) -> None:
    """Route TOPIC (or some of its partitions) to CLUSTER. The topic must exist there,
    and on the group home (committed offsets live there; created if missing)."""
    settings = app.settings
    setup = _setup(settings, routes)
    chosen = int_list(partitions, "--partitions") if partitions is not None else None
    with ClusterAdmin(settings.cluster(cluster)) as admin:
        count = len(admin.describe_topic(topic).partitions)
    bad = [p for p in chosen or [] if p >= count]
    if bad:
        raise ConfigError(
            f"topic '{topic}' has {count} partition(s) on {cluster}; no partition {bad[0]}"
        )
    created = _offsets_home(settings, setup, topic, count)
    registry = setup.registry()
    try:
        table = registry.read_routes()
        new = registry.write_routes(table.with_route(topic, cluster, chosen))
    finally:
        registry.close()
    if as_json:
        render.print_json(
            {
                "topic": topic,
                "cluster": cluster,
                "partitions": chosen,
                "routes_version": new.version,
                "created_on_group_home": created,
            }
        )
        return
    if created:
        render.progress(
            f"created topic {topic} ({count} partitions) on group home {setup.group_home} "
            "to hold its committed offsets"
        )
    what = f"partition(s) {','.join(map(str, chosen))} of {topic}" if chosen else f"topic {topic}"
    render.out.print(f"routed {what} to {cluster} (routing table version {new.version})")


def _offsets_home(settings: Settings, setup: Setup, topic: str, count: int) -> bool:
    """Kafka keeps committed offsets only for partitions it has: the topic must exist on
    the group home. True if it had to be created."""
    if setup.group_home is None:
        raise ConfigError("name the group home cluster in clusters.yaml 'gateway: group_home:'")
    with ClusterAdmin(settings.cluster(setup.group_home)) as home:
        found = home.describe_topics_if_present([topic])
        if found:
            if len(found[0].partitions) != count:
                raise ConflictError(
                    f"topic '{topic}' has {len(found[0].partitions)} partition(s) on the group "
                    f"home {setup.group_home} and {count} where it is routed; make them equal"
                )
            return False
        home.create_topic(topic, count)
        return True


@route.command("delete")
@click.option("--topic", required=True)
@routes_option
@pass_app
def route_delete(app: AppContext, topic: str, routes: str | None) -> None:
    """Remove TOPIC from the routing table (clients stop seeing it)."""
    registry = _setup(app.settings, routes).registry()
    try:
        new = registry.write_routes(registry.read_routes().without(topic))
    finally:
        registry.close()
    render.out.print(f"topic {topic} is no longer routed (routing table version {new.version})")


# ---------------------------------------------------------------- partition migrations


@group.command("migrate")
@click.option("--topic", required=True)
@click.option("--partitions", required=True, metavar="P,P,...")
@click.option("--to", "target", required=True, metavar="CLUSTER")
@click.option(
    "--mode",
    type=click.Choice(["smooth", "failover"]),
    default="smooth",
    show_default=True,
    help="smooth: the origin is healthy; writes are fenced, then flipped to the target. "
    "failover: the origin is down; the last high watermark the gateway recorded becomes "
    "the migration offset.",
)
@click.option(
    "--ignore-origin",
    is_flag=True,
    help="Never read the origin's records again: reads start at the migration offset.",
)
@click.option(
    "--keep-origin",
    is_flag=True,
    help="Keep the origin's topic once aged (default: deleted when nothing is left to read).",
)
@click.option(
    "--fence-timeout",
    type=click.FloatRange(1, 300),
    default=FENCE_TIMEOUT_S,
    show_default=True,
    help="Seconds to wait for every instance to acknowledge the fence, then give up.",
)
@routes_option
@json_option
@pass_app
def migrate(
    app: AppContext,
    topic: str,
    partitions: str,
    target: str,
    mode: str,
    ignore_origin: bool,
    keep_origin: bool,
    fence_timeout: float,
    routes: str | None,
    as_json: bool,
) -> None:
    """Move partitions of TOPIC to cluster CLUSTER while clients keep using the gateway.

    smooth: writes of those partitions pause on every instance until all of them
    acknowledged, the origin's end offset becomes the migration offset, and writes go on
    to the target. failover (origin down): the last high watermark the gateway saw is
    the migration offset; what the origin acknowledged after it is reported as
    unavailable once it is back. Clients keep reading the same offsets: below the
    migration offset from the origin (unless --ignore-origin), above it from the target.
    """
    settings = app.settings
    setup = _setup(settings, routes)
    if setup.group_home is None:
        raise ConfigError("name the group home cluster in clusters.yaml 'gateway: group_home:'")
    chosen = int_list(partitions, "--partitions")
    store = store_for(settings)
    registry = setup.registry()
    subjects = [f"{topic}[{p}]" for p in chosen]
    try:
        if mode == "failover":
            moved = mover.failover(
                settings, registry, setup.group_home, topic, chosen, target,
                ignore_origin, keep_origin, render.progress,
            )  # fmt: skip
        else:
            moved = mover.smooth(
                settings, registry, setup.group_home, topic, chosen, target,
                render.progress, fence_timeout, keep_origin, ignore_origin,
            )  # fmt: skip
    except KMigrateError as exc:
        record_event(store, AUDIT, "gateway migrate", subjects, "refused", str(exc))
        raise
    finally:
        registry.close()
    detail = "; ".join(
        f"{m.topic}[{m.partition}] {m.origin}->{m.target} end_offset {m.end_offset} epoch {m.epoch}"
        for m in moved
    )
    record_event(store, AUDIT, "gateway migrate", subjects, "done", detail)
    if as_json:
        render.print_json({"mode": mode, "moved": [dataclasses.asdict(m) for m in moved]})
        return
    fenced = f"; writes fenced for {moved[0].fence_ms} ms" if mode == "smooth" else ""
    render.table(
        f"migrated to {target} ({mode}){fenced}",
        ["partition", "from", "end offset", "target base", "epoch", "producers carried"],
        [
            (f"{m.topic}[{m.partition}]", m.origin, m.end_offset, m.target_base, m.epoch, m.writers)
            for m in moved
        ],
    )


@group.command("migrations")
@routes_option
@json_option
@pass_app
def migrations(app: AppContext, routes: str | None, as_json: bool) -> None:
    """Every partition migration: its record and where its offsets are served from."""
    settings = app.settings
    registry = _setup(settings, routes).registry()
    try:
        table = registry.read_routes()
    finally:
        registry.close()
    shown = migrations_json(settings, table)
    rows = shown["migrations"]
    if as_json:
        render.print_json(shown)
        return
    render.table(
        "partition migrations",
        ["partition", "origin", "target", "mode", "status", "end offset", "target base",
         "epoch", "left on origin", "unavailable on origin"],
        [
            (f"{r['topic']}[{r['partition']}]", r["origin"], r["target"], r["mode"], r["status"],
             r["end_offset"] if r["end_offset"] is not None else "-", r["target_base"], r["epoch"],
             "?" if r["left_on_origin"] is None else f"{r['left_on_origin']:,}",
             "{}-{}".format(r["unavailable"][0], r["unavailable"][1] - 1)
             if r["unavailable"] else "")
            for r in rows
        ],
    )  # fmt: skip
    if table.shielded:
        render.out.print(f"shielded clusters: {', '.join(sorted(table.shielded))}")


@group.command("shield")
@click.argument("cluster")
@routes_option
@pass_app
def shield(app: AppContext, cluster: str, routes: str | None) -> None:
    """Stop sending requests to CLUSTER: its partitions answer retriable errors at once,
    so one broken backend cannot slow the gateway down for the others."""
    _shield(app, cluster, routes, True)


@group.command("unshield")
@click.argument("cluster")
@routes_option
@pass_app
def unshield(app: AppContext, cluster: str, routes: str | None) -> None:
    """Serve CLUSTER's partitions again."""
    _shield(app, cluster, routes, False)


def _shield(app: AppContext, cluster: str, routes: str | None, on: bool) -> None:
    settings = app.settings
    settings.cluster(cluster)  # a name clusters.yaml knows
    registry = _setup(settings, routes).registry()
    try:
        table = registry.read_routes()
        if (cluster in table.shielded) == on:
            render.out.print(f"cluster {cluster} is already {'shielded' if on else 'served'}")
            return
        new = registry.write_routes(table.with_shield(cluster, on))
    finally:
        registry.close()
    action = "gateway shield" if on else "gateway unshield"
    record_event(store_for(settings), AUDIT, action, [cluster], "done", None)
    state = "shielded: its partitions answer retriable errors" if on else "served again"
    render.out.print(f"cluster {cluster} {state} (routing table version {new.version})")

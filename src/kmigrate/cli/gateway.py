"""`kmigrate gateway start | status | route | migrate | migrations | shield`: the
Kafka-protocol gateway and the partitions it moves between backends."""

from __future__ import annotations

import dataclasses
import logging
import subprocess
import sys
from pathlib import Path

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, int_list, pass_app
from kmigrate.cli.options import json_option
from kmigrate.config import ClientsConfig
from kmigrate.errors import ConfigError
from kmigrate.gateway.control import command
from kmigrate.gateway.control.mover import FENCE_TIMEOUT_S
from kmigrate.gateway.control.placement import Instance
from kmigrate.gateway.control.registry import Setup, setup_of
from kmigrate.serve.security import is_loopback

routes_option = click.option(
    "--routes",
    metavar="ZK_CONNECT[/PATH]",
    help="Where the routing table and instances live (default: clusters.yaml 'gateway:').",
)


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
    setup = setup_of(settings, routes, group_home)
    if setup.group_home is None:
        raise ConfigError("name the group home cluster: --group-home or 'gateway: group_home:'")
    settings.cluster(setup.group_home)
    host, port = _host_port(listen, "--listen")
    _check_listen(host, settings.gateway.clients if settings.gateway else None)
    http = _host_port(http_listen, "--http-listen") if http_listen else None
    me = Instance(node_id, host, port)
    if detach:
        _detach(app, setup, me, http_listen)
        return
    _log_to_stderr()
    from kmigrate.gateway.serving import server  # the server's stack, only to serve
    from kmigrate.gateway.serving.authentication import access_of

    folder = settings.path.parent if settings.path else Path.cwd()
    access = access_of(settings.gateway, dict(settings.clusters), folder)

    registry = setup.registry()
    clusters = [settings.cluster(n) for n in settings.clusters]
    clients = settings.gateway.clients.security_protocol if settings.gateway else "PLAINTEXT"
    render.progress(
        f"gateway instance {node_id} on {listen} ({clients}): "
        f"backends {', '.join(settings.clusters)}; "
        f"group home {setup.group_home}; routes in {setup.where}{setup.path}"
    )
    try:
        server.run_until_signalled(
            lambda stop: server.run_instance(
                setup.where,
                me,
                clusters,
                setup.home(),
                registry,
                stop=stop,
                age_every_s=age_every or setup.age_every_s,
                http=http,
                audit=command.auditor(settings),
                access=access,
            )
        )
    finally:
        registry.close()


def _host_port(value: str, option: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"{option} {value}: give HOST:PORT")
    return host, int(port)


def _check_listen(host: str, clients: ClientsConfig | None) -> None:
    """Without client authentication, only loopback: as `kmigrate serve` without a token."""
    if not is_loopback(host) and not (clients and clients.authenticated):
        raise ConfigError(
            f"listening on {host} (not loopback) needs client authentication: configure "
            "'gateway: clients: sasl:' (or tls with a required client certificate) in "
            "clusters.yaml"
        )


def _log_to_stderr() -> None:
    """A long-running server: its own events at INFO, with times, on stderr."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("kmigrate.gateway")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


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
    command.wait_registered(setup, me.node_id, proc, log)
    render.progress(f"gateway instance {me.node_id} runs as pid {proc.pid}; log: {log}")


@group.command("status")
@routes_option
@json_option
@pass_app
def status(app: AppContext, routes: str | None, as_json: bool) -> None:
    """The live instances and the routing table."""
    instances, table = command.status(setup_of(app.settings, routes))
    body = command.status_json(instances, table)
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
    if table.default:
        render.out.print(f"default route (new topics): {table.default}")


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
    setup = setup_of(settings, routes)
    chosen = int_list(partitions, "--partitions") if partitions is not None else None
    done = command.route(settings, setup, topic, cluster, chosen)
    if as_json:
        render.print_json(
            {
                "topic": topic,
                "cluster": cluster,
                "partitions": chosen,
                "routes_version": done.routes_version,
                "created_on_group_home": done.created_on_group_home,
            }
        )
        return
    if done.created_on_group_home:
        render.progress(
            f"created topic {topic} ({done.count} partitions) on group home {setup.group_home} "
            "to hold its committed offsets"
        )
    what = f"partition(s) {','.join(map(str, chosen))} of {topic}" if chosen else f"topic {topic}"
    render.out.print(f"routed {what} to {cluster} (routing table version {done.routes_version})")


@route.command("default")
@click.option("--cluster", metavar="CLUSTER", help="Where new topics are created.")
@click.option("--clear", is_flag=True, help="No default route: CreateTopics is refused.")
@routes_option
@pass_app
def route_default(app: AppContext, cluster: str | None, clear: bool, routes: str | None) -> None:
    """Topics clients create through the gateway (CreateTopics: kafka-topics --create,
    Kafka Streams' internal topics) are made on CLUSTER (and on the group home, for
    their committed offsets) and routed there."""
    if (cluster is None) == (not clear):
        raise ConfigError("give --cluster CLUSTER or --clear")
    new = command.set_default(app.settings, setup_of(app.settings, routes), cluster)
    what = (
        f"new topics are created on cluster {cluster}"
        if cluster
        else "no default route: creating topics through the gateway is refused"
    )
    render.out.print(f"{what} (routing table version {new.version})")


@route.command("delete")
@click.option("--topic", required=True)
@routes_option
@pass_app
def route_delete(app: AppContext, topic: str, routes: str | None) -> None:
    """Remove TOPIC from the routing table (clients stop seeing it)."""
    new = command.unroute(setup_of(app.settings, routes), topic)
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
    setup = setup_of(app.settings, routes)
    setup.home()  # refused before anything else is looked at
    asked = command.MoveRequest(
        topic,
        int_list(partitions, "--partitions"),
        target,
        mode,
        ignore_origin,
        keep_origin,
        fence_timeout,
    )
    moved = command.move(app.settings, setup, asked, render.progress)
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
    shown = command.migrations(app.settings, setup_of(app.settings, routes))
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
    if shown["shielded"]:
        render.out.print(f"shielded clusters: {', '.join(shown['shielded'])}")


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
    new = command.shield(app.settings, routes, cluster, on)
    if new is None:
        render.out.print(f"cluster {cluster} is already {'shielded' if on else 'served'}")
        return
    state = "shielded: its partitions answer retriable errors" if on else "served again"
    render.out.print(f"cluster {cluster} {state} (routing table version {new.version})")

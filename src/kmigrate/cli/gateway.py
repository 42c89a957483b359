"""`kmigrate gateway start | status | route | migrate | migrations | shield`: the
Kafka-protocol gateway and the partitions it moves between backends.

The gateway's control code (kmigrate.gateway.control.command) pulls in the protocol
library (kio, half a second or more): it is imported inside each command, so `--help`
and a refused command line never pay for it. So is its shared state (the ZooKeeper
client): `kmigrate gateway --help` loads no client library."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kmigrate.cli import gateway_moves, render
from kmigrate.cli.context import AppContext, pass_app
from kmigrate.cli.gateway_moves import partition_numbers, routes_option
from kmigrate.cli.operations import host_port
from kmigrate.cli.options import (
    check_topic_name,
    cluster_option,
    confirm,
    confirm_options,
    deprecated,
    duration_option,
    json_option,
    require,
)
from kmigrate.errors import ConfigError
from kmigrate.gateway.control.placement import Instance
from kmigrate.serve.security import is_loopback

if TYPE_CHECKING:
    from kmigrate.config import ClientsConfig, Settings
    from kmigrate.gateway.control.shared_state import Setup


@click.group("gateway")
def group() -> None:
    """A Kafka-protocol endpoint that routes each topic partition to a backend cluster."""


group.add_command(gateway_moves.migrate)
group.add_command(gateway_moves.migrations)


@group.command("start")
@click.option(
    "--listen",
    default="127.0.0.1:9092",
    show_default=True,
    metavar="HOST:PORT",
    help="Where Kafka clients connect.",
)
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
@duration_option(
    "--age-every",
    default=None,
    minimum=0.1,
    help="Period of the aging timer (default: clusters.yaml 'gateway: age_every_s:', 60s).",
)
@click.option(
    "--http-listen",
    metavar="HOST:PORT",
    help="Also serve the DIS stream HTTP API (put records, cursors, get records) here.",
)
@click.option("--detach", is_flag=True, help="Run in the background; print its pid and log.")
@json_option
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
    as_json: bool,
) -> None:
    """Run one gateway instance until SIGTERM or Ctrl-C. With --json, its address and
    pid (and with --detach its log) as one JSON object on stdout."""
    from kmigrate.gateway.control.shared_state import setup_of

    host, port = host_port(listen, "--listen")
    http = host_port(http_listen, "--http-listen") if http_listen else None
    settings = app.settings
    setup = setup_of(settings, routes, group_home)
    if setup.group_home is None:
        raise ConfigError("name the group home cluster: --group-home or 'gateway: group_home:'")
    settings.cluster(setup.group_home)
    _check_listen(host, settings.gateway.clients if settings.gateway else None)
    me = Instance(node_id, host, port)
    if detach:
        _detach(app, setup, me, http_listen, as_json)
        return
    if as_json:
        render.print_json(_started(me, http_listen, os.getpid(), None))
        sys.stdout.flush()
    _log_to_stderr()
    from kmigrate.gateway.control import command
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


def _started(me: Instance, http_listen: str | None, pid: int, log: Path | None) -> dict[str, Any]:
    return {
        "id": me.node_id,
        "listen": f"{me.host}:{me.port}",
        "http_listen": http_listen,
        "pid": pid,
        "log": str(log) if log else None,
    }


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


def _detach(
    app: AppContext, setup: Setup, me: Instance, http_listen: str | None, as_json: bool
) -> None:
    from kmigrate.gateway.control import command

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
    if as_json:
        render.print_json(_started(me, http_listen, proc.pid, log))
        return
    render.progress(f"gateway instance {me.node_id} runs as pid {proc.pid}; log: {log}")


@group.command("status")
@routes_option
@json_option
@pass_app
def status(app: AppContext, routes: str | None, as_json: bool) -> None:
    """The live instances and the routing table."""
    from kmigrate.gateway.control.shared_state import setup_of

    setup = setup_of(app.settings, routes)
    from kmigrate.gateway.control import command

    instances, table = command.status(setup)
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
@click.option("--topic", required=True, metavar="TOPIC", help="The topic to route.")
@cluster_option(help="Where the topic (or its partitions) is served from.")
@click.option("--partitions", metavar="P,P,...", help="Only these partitions (exceptions).")
@routes_option
@json_option
@pass_app
def route_set(
    app: AppContext,
    topic: str,
    cluster_name: str,
    partitions: str | None,
    routes: str | None,
    as_json: bool,
) -> None:
    """Route TOPIC (or some of its partitions) to CLUSTER. The topic must exist there,
    and on the group home (committed offsets live there; created if missing)."""
    check_topic_name(topic)
    chosen = partition_numbers(partitions) if partitions is not None else None
    settings = app.settings
    settings.cluster(cluster_name)
    from kmigrate.gateway.control.shared_state import setup_of

    setup = setup_of(settings, routes)
    from kmigrate.gateway.control import command

    done = command.route(settings, setup, topic, cluster_name, chosen)
    if as_json:
        render.print_json(
            {
                "topic": topic,
                "cluster": cluster_name,
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
    render.out.print(
        f"routed {what} to {cluster_name} (routing table version {done.routes_version})"
    )


@route.command("default")
@cluster_option(help="Where new topics are created.", required=False)
@click.option("--clear", is_flag=True, help="No default route: CreateTopics is refused.")
@routes_option
@json_option
@pass_app
def route_default(
    app: AppContext, cluster_name: str | None, clear: bool, routes: str | None, as_json: bool
) -> None:
    """Topics clients create through the gateway (CreateTopics: kafka-topics --create,
    Kafka Streams' internal topics) are made on CLUSTER (and on the group home, for
    their committed offsets) and routed there."""
    if (cluster_name is None) == (not clear):
        raise ConfigError("give --cluster CLUSTER or --clear")
    if cluster_name is not None:
        app.settings.cluster(cluster_name)
    from kmigrate.gateway.control.shared_state import setup_of

    setup = setup_of(app.settings, routes)
    from kmigrate.gateway.control import command

    new = command.set_default(app.settings, setup, cluster_name)
    if as_json:
        render.print_json({"default": cluster_name, "routes_version": new.version})
        return
    what = (
        f"new topics are created on cluster {cluster_name}"
        if cluster_name
        else "no default route: creating topics through the gateway is refused"
    )
    render.out.print(f"{what} (routing table version {new.version})")


@route.command("delete")
@click.option("--topic", required=True, metavar="TOPIC", help="The topic whose route to remove.")
@routes_option
@confirm_options
@json_option
@pass_app
def route_delete(
    app: AppContext, topic: str, routes: str | None, dry_run: bool, yes: bool, as_json: bool
) -> None:
    """Remove TOPIC from the routing table: clients of the gateway stop seeing it (its
    data stays on the backend). Shows the route first; removes it only with --yes or a
    "y" on a terminal."""
    check_topic_name(topic)
    from kmigrate.gateway.control.shared_state import setup_of

    setup = setup_of(app.settings, routes)
    from kmigrate.gateway.control import command

    now = command.route_of(setup, topic)
    where = now.cluster + "".join(
        f", partition {p} on {c}" for p, c in sorted(now.partitions.items())
    )
    action = f"remove topic {topic} (routed to {where}) from the routing table"
    if not as_json:
        render.out.print(f"would {action}: clients of the gateway stop seeing it", soft_wrap=True)
    if not confirm(action, dry_run=dry_run, yes=yes):
        if as_json:
            render.print_json({"topic": topic, "cluster": now.cluster, "deleted": False})
        return
    new = command.unroute(setup, topic)
    if as_json:
        render.print_json(
            {"topic": topic, "cluster": now.cluster, "deleted": True, "routes_version": new.version}
        )
        return
    render.out.print(f"topic {topic} is no longer routed (routing table version {new.version})")


class _OldArgument(click.Argument):
    """A positional argument kept for one release: not shown in the usage line."""

    def get_usage_pieces(self, ctx: click.Context) -> list[str]:
        return []


def shield_options(command: Any) -> Any:
    """`--cluster NAME`, the old positional CLUSTER still accepted (deprecated)."""
    command = click.argument("old_cluster", required=False, cls=_OldArgument)(command)
    command = cluster_option(help="The backend cluster.", required=False)(command)
    command = routes_option(command)
    return json_option(command)


def _shield_command(name: str, on: bool, doc: str) -> click.Command:
    """`gateway shield` (``on``) or `gateway unshield`."""

    @click.command(name, help=doc)
    @shield_options
    @pass_app
    def command(
        app: AppContext,
        cluster_name: str | None,
        old_cluster: str | None,
        routes: str | None,
        as_json: bool,
    ) -> None:
        _shield(app.settings, _cluster(cluster_name, old_cluster, name), routes, on, as_json)

    return command


group.add_command(
    _shield_command(
        "shield",
        True,
        "Stop sending requests to CLUSTER: its partitions answer retriable errors at once, "
        "so one broken backend cannot slow the gateway down for the others.",
    )
)
group.add_command(_shield_command("unshield", False, "Serve CLUSTER's partitions again."))


def _cluster(given: str | None, old: str | None, name: str) -> str:
    if old is not None:
        deprecated(f"gateway {name} CLUSTER", f"gateway {name} --cluster CLUSTER")
        if given is not None and given != old:
            raise click.UsageError(f"give the cluster once: --cluster {given} or {old}")
    return str(require(given or old, "--cluster"))


def _shield(settings: Settings, cluster: str, routes: str | None, on: bool, as_json: bool) -> None:
    from kmigrate.gateway.control.shared_state import setup_of

    settings.cluster(cluster)  # a name clusters.yaml knows
    setup_of(settings, routes)  # a gateway to change
    from kmigrate.gateway.control import command

    done = command.shield(settings, routes, cluster, on)
    if as_json:
        render.print_json(
            {
                "cluster": cluster,
                "shielded": on,
                "changed": done is not None,
                "routes_version": done.table.version if done else None,
                "pending_instances": done.pending if done else [],
            }
        )
        return
    if done is None:
        render.out.print(f"cluster {cluster} is already {'shielded' if on else 'served'}")
        return
    state = "shielded: its partitions answer retriable errors" if on else "served again"
    render.out.print(f"cluster {cluster} {state} (routing table version {done.table.version})")
    if done.pending:
        ids = ", ".join(str(i) for i in done.pending)
        render.err.print(
            f"warning: gateway instance(s) {ids} did not say within {command.APPLIED_S:g}s "
            "that they serve this table; they will once their ZooKeeper watch fires "
            "(`kmigrate gateway status` lists the live instances)"
        )

"""`kmigrate sandbox up | down | status`: real local Kafka clusters.

The sandbox's process code is imported by the commands that run it: `kmigrate sandbox
--help` loads this module and should not load the Kafka or ZooKeeper clients."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kmigrate.cli import render
from kmigrate.cli.options import (
    confirm,
    confirm_options,
    duration_option,
    json_option,
    timeout_option,
)
from kmigrate.cli.sandbox_nodes import (
    dir_option,
    restart_broker,
    start_zk_server,
    stop_broker,
    stop_zk_server,
)
from kmigrate.errors import SandboxError
from kmigrate.sandbox.jars import DEFAULT_KAFKA_VERSION, ensure_jars
from kmigrate.sandbox.state import MAX_BROKERS, SandboxCluster

if TYPE_CHECKING:
    from kmigrate.sandbox import manager
    from kmigrate.sandbox import status as sandbox_status


clusters_option = click.option(
    "--cluster",
    "clusters",
    multiple=True,
    metavar="NAME",
    help="Cluster to act on; repeat for several (up: default source and target; down: all).",
)


@click.group("sandbox")
def group() -> None:
    """Real Apache Kafka clusters (KRaft, or ZooKeeper mode on 3.9), their Schema
    Registries and ZooKeeper ensembles on 127.0.0.1, from Maven Central jars."""


@group.command("up")
@dir_option
@clusters_option
@click.option(
    "--brokers",
    type=click.IntRange(1, MAX_BROKERS),
    default=1,
    show_default=True,
    help="Brokers per cluster (a running cluster grows to this many; up to 6).",
)
@click.option(
    "--racks",
    default=None,
    metavar="R1,R2,..",
    help="Rack label per broker (default rack-1, rack-2, ...).",
)
@click.option(
    "--kafka-version",
    default=None,
    help=f"Apache Kafka release, 4.x or 3.9.x (default {DEFAULT_KAFKA_VERSION}).",
)
@click.option(
    "--secure",
    is_flag=True,
    help="SASL/SCRAM-SHA-512 with an authorizer denying what no ACL allows (KRaft: the "
    "standard authorizer; ZooKeeper mode: AclAuthorizer); super-user 'admin' and plain "
    "user 'client', passwords in DIR/secrets.env.",
)
@click.option(
    "--tls",
    is_flag=True,
    help="Clients and brokers talk TLS (with --secure: SASL_SSL), certificates from a CA "
    "of the cluster's own in DIR/CLUSTER/tls; clusters.yaml trusts it (ssl.ca.location).",
)
@click.option(
    "--internal-plaintext",
    is_flag=True,
    help="With --secure in ZooKeeper mode: the brokers talk to each other on a PLAINTEXT "
    "listener of their own, clients on SASL; everyone allowed where no ACL says.",
)
@click.option(
    "--mtls",
    is_flag=True,
    help="With --tls and --zookeeper: the brokers ask every client for a certificate of "
    "the cluster's CA (ssl.client.auth=required) and name principals by its common name; "
    "the brokers' and the admin's are the super users. clusters.yaml presents the admin's.",
)
@click.option(
    "--zookeeper",
    metavar="NAME[/CHROOT]",
    help="A ZooKeeper ensemble (started if new). With --cluster: run the clusters in "
    "ZooKeeper mode on it (Kafka 3.9.x; default 3.9.1), under CHROOT if given; alone: "
    "start only the ensemble.",
)
@click.option(
    "--nodes",
    type=click.IntRange(1, 5),
    default=3,
    show_default=True,
    help="Servers of a new ZooKeeper ensemble.",
)
@click.option(
    "--schema-registry",
    is_flag=True,
    help="Give each cluster its own Confluent-compatible Schema Registry (AxonOps, built "
    "once with Go >= 1.26; memory storage: a restarted registry starts empty). clusters.yaml "
    "gets its URL.",
)
@timeout_option("120s", help="How long to wait for every broker to answer.")
@json_option
def up(
    directory: Path | None,
    clusters: tuple[str, ...],
    brokers: int,
    racks: str | None,
    kafka_version: str | None,
    secure: bool,
    tls: bool,
    internal_plaintext: bool,
    mtls: bool,
    zookeeper: str | None,
    nodes: int,
    schema_registry: bool,
    timeout: float,
    as_json: bool,
) -> None:
    """Start clusters (and ZooKeeper ensembles, Schema Registries) and wait until each
    answers: every broker's process alive and answering on its own endpoint, every
    ensemble with a quorum, every registry answering GET /subjects.

    Idempotent: running clusters and registries are left as they are; stopped brokers
    and ZooKeeper nodes restart on their data, stopped registries on their port (empty).
    A failed or interrupted `up` stops what it started.
    """
    from kmigrate.config import SANDBOX_CONFIG_NAME, sandbox_dir
    from kmigrate.sandbox import manager

    directory = directory or sandbox_dir()
    only_ensemble = zookeeper is not None and not clusters
    request = manager.UpRequest(
        clusters=() if only_ensemble else (clusters or manager.DEFAULT_CLUSTERS),
        brokers=brokers,
        kafka_version=kafka_version,
        secure=secure,
        tls=tls,
        internal_plaintext=internal_plaintext,
        mtls=mtls,
        racks=[r.strip() for r in racks.split(",")] if racks else None,
        timeout=timeout,
        zookeeper=None if only_ensemble else zookeeper,
        ensembles=[zookeeper.split("/", 1)[0]] if only_ensemble and zookeeper else [],
        nodes=nodes,
        schema_registry=schema_registry,
    )
    state = manager.up(directory, request, report=render.progress)
    names = list(request.clusters)
    ensembles = request.ensemble_names()
    if as_json:
        render.print_json(
            {
                "dir": str(state.directory),
                "config": str(state.directory / SANDBOX_CONFIG_NAME),
                "clusters": {
                    n: {
                        "bootstrap_servers": state.clusters[n].bootstrap_servers,
                        "kafka_version": state.clusters[n].kafka_version,
                        "secure": state.clusters[n].secure,
                        "security_protocol": state.clusters[n].listener,
                        "zookeeper_connect": state.clusters[n].zookeeper_connect,
                        "schema_registry": _registry_url(state.clusters[n]),
                    }
                    for n in names
                },
                "zookeeper": {
                    n: {
                        "connect": state.ensembles[n].connect,
                        "nodes": len(state.ensembles[n].nodes),
                    }
                    for n in ensembles
                },
            }
        )
        return
    if ensembles:
        render.table(
            None,
            ["zookeeper ensemble", "connect", "nodes"],
            [(n, state.ensembles[n].connect, len(state.ensembles[n].nodes)) for n in ensembles],
        )
    if not names:
        render.out.print(f"config: {state.directory / SANDBOX_CONFIG_NAME}")
        return
    render.table(
        None,
        ["cluster", "bootstrap servers", "kafka", "brokers", "security", "schema registry"],
        [
            (
                n,
                state.clusters[n].bootstrap_servers,
                state.clusters[n].kafka_version,
                len(state.clusters[n].brokers),
                state.clusters[n].listener,
                _registry_url(state.clusters[n]) or "-",
            )
            for n in names
        ],
    )
    render.out.print(f"config: {state.directory / SANDBOX_CONFIG_NAME}")


def _registry_url(cluster: SandboxCluster) -> str | None:
    return cluster.schema_registry.url if cluster.schema_registry else None


@group.command("down")
@dir_option
@clusters_option
@click.option(
    "--zookeeper",
    "ensembles",
    multiple=True,
    metavar="ENSEMBLE",
    help="ZooKeeper ensemble to stop; repeat for several (default with no --cluster: all).",
)
@click.option(
    "--purge",
    is_flag=True,
    help="Also delete their data and logs (asks first; --yes for scripts).",
)
@duration_option("--grace", default="20s", help="How long between SIGTERM and SIGKILL.")
@confirm_options
@json_option
def down(
    directory: Path | None,
    clusters: tuple[str, ...],
    ensembles: tuple[str, ...],
    purge: bool,
    grace: float,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Stop the brokers, Schema Registries and ZooKeeper nodes this sandbox started, and
    only those.
    Stopping needs no --yes (`sandbox up` starts them again on their data); --purge
    deletes their data too, and goes ahead only with --yes or a "y" on a terminal.
    Exits 7 when there is no sandbox in the folder."""
    from kmigrate.config import sandbox_dir
    from kmigrate.sandbox import manager

    directory = directory or sandbox_dir()
    everything = not clusters and not ensembles
    chosen = (None, None) if everything else (clusters, ensembles)
    state, names, ens = manager.down_targets(directory, *chosen)
    folders = [state.cluster_dir(n) for n in names] + [state.ensemble_dir(n) for n in ens]
    action = f"stop {', '.join([*names, *(f'ZooKeeper ensemble {n}' for n in ens)])}"
    if purge:
        action += f" and delete {', '.join(str(f) for f in folders)}"
    if (purge or dry_run) and not as_json:
        render.out.print(f"would {action}", soft_wrap=True)
    if (purge or dry_run) and not confirm(action, dry_run=dry_run, yes=yes):
        if as_json:
            render.print_json(_down_json(state.directory, names, ens, purge, done=False))
        return
    stopped = manager.down(directory, chosen[0], purge=purge, grace=grace, ensembles=chosen[1])
    if as_json:
        render.print_json(
            _down_json(state.directory, names, ens, purge, done=True, stopped=stopped)
        )
        return
    for process in stopped:
        where = process.path.parent.relative_to(state.directory)
        render.progress(f"stopped {process.kind} {where} (pid {process.pid})")
    what = ", ".join([*clusters, *ensembles]) if not everything else "all clusters and ensembles"
    if not stopped:
        what += " (nothing was running)"
    render.progress(
        f"stopped {what} in {state.directory}" + (" and deleted their data" if purge else "")
    )


def _down_json(
    directory: Path,
    clusters: list[str],
    ensembles: list[str],
    purge: bool,
    *,
    done: bool,
    stopped: Sequence[manager.Stopped] = (),
) -> dict[str, object]:
    return {
        "dir": str(directory),
        "clusters": clusters,
        "zookeeper": ensembles,
        "purge": purge,
        "done": done,
        "stopped": [{"kind": p.kind, "folder": str(p.path.parent), "pid": p.pid} for p in stopped],
    }


@group.command("status")
@dir_option
@json_option
def status(directory: Path | None, as_json: bool) -> None:
    """Which brokers, Schema Registries and ZooKeeper nodes are alive. Exits 1 when any
    is down, 7 when there is no sandbox in the folder."""
    from kmigrate.config import sandbox_dir
    from kmigrate.sandbox import status as sandbox_status

    directory = directory or sandbox_dir()
    rows = sandbox_status.status(directory)
    nodes = sandbox_status.ensemble_status(directory)
    registries = sandbox_status.registry_status(directory)
    if not (rows or nodes):
        raise SandboxError(
            f"no sandbox in {directory.resolve()}; start one with `kmigrate sandbox up`"
        )
    if as_json:
        render.print_json(
            {
                "dir": str(directory.resolve()),
                "brokers": rows,
                "schema_registries": registries,
                "zookeeper": nodes,
            }
        )
    else:
        _print_status(directory, rows, nodes, registries)
    alive = [r.alive for r in rows] + [n.alive for n in nodes] + [r.alive for r in registries]
    if not all(alive):
        sys.exit(1)


def _print_status(
    directory: Path,
    rows: list[sandbox_status.BrokerStatus],
    nodes: list[sandbox_status.ZkNodeStatus],
    registries: list[sandbox_status.RegistryStatus],
) -> None:
    if rows:
        render.table(
            f"sandbox {directory.resolve()}",
            ["cluster", "broker", "port", "rack", "pid", "state"],
            [
                (
                    r.cluster,
                    r.node_id,
                    r.port,
                    r.rack,
                    r.pid or "-",
                    "serving" if r.serving else ("starting" if r.alive else "down"),
                )
                for r in rows
            ],
        )
    if registries:
        render.table(
            f"Schema Registries in {directory.resolve()}",
            ["cluster", "url", "pid", "state"],
            [
                (
                    r.cluster,
                    r.url,
                    r.pid or "-",
                    "serving" if r.serving else ("starting" if r.alive else "down"),
                )
                for r in registries
            ],
        )
    if nodes:
        render.table(
            f"ZooKeeper ensembles in {directory.resolve()}",
            ["ensemble", "node", "client port", "pid", "state"],
            [(n.ensemble, n.node_id, n.client_port, n.pid or "-", n.mode or "down") for n in nodes],
        )


@group.command("fetch")
@click.option(
    "--kafka-version",
    default=DEFAULT_KAFKA_VERSION,
    show_default=True,
    help="The Kafka release whose jars to fetch.",
)
@click.option(
    "--schema-registry",
    is_flag=True,
    help="Also build the sandbox's Schema Registry (needs Go >= 1.26 on PATH; about a "
    "minute the first time).",
)
@json_option
def fetch(kafka_version: str, schema_registry: bool, as_json: bool) -> None:
    """Download Kafka's jars from Maven Central into the cache, make the class-data
    archives its nodes start from (a throwaway node, once: `up` starts nodes ~1 s of CPU
    sooner with them; KMIGRATE_SANDBOX_CDS=0 turns them off), and with --schema-registry
    build the Schema Registry too (`up` fetches and builds itself when needed)."""
    from kmigrate.sandbox.cds_build import ensure_archives
    from kmigrate.sandbox.schema_registry import ensure_registry

    jars = ensure_jars(kafka_version)
    archives = ensure_archives(kafka_version, render.progress)
    registry = ensure_registry(render.progress) if schema_registry else None
    if as_json:
        body: dict[str, object] = {
            "kafka_version": kafka_version,
            "jars": str(jars),
            "class_archives": [str(a) for a in archives],
        }
        if registry is not None:
            body["schema_registry"] = str(registry)
        render.print_json(body)
        return
    render.progress(f"jars for Kafka {kafka_version}: {jars}")
    for archive in archives:
        render.progress(f"class-data archive: {archive}")
    if registry is not None:
        render.progress(f"Schema Registry: {registry}")


for _command in (stop_broker, restart_broker, stop_zk_server, start_zk_server):
    group.add_command(_command)

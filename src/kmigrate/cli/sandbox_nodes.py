"""`kmigrate sandbox stop-broker | restart-broker | stop-zk-server | start-zk-server`:
one node of a sandbox at a time, the stand-ins for an operator's own scripts.

The sandbox's process code is imported by the commands that run it: `kmigrate sandbox
--help` loads this module and should not load the Kafka or ZooKeeper clients."""

from __future__ import annotations

from pathlib import Path

import click

from kmigrate.cli import render
from kmigrate.cli.options import json_option
from kmigrate.ensemble_move.members import parse_member
from kmigrate.errors import ConfigError

dir_option = click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Run directory with configs, data, logs and pids (default: $KMIGRATE_SANDBOX_DIR "
    "or .kmigrate/sandbox).",
)


def done(as_json: bool, text: str, body: dict[str, object]) -> None:
    """What a one-step command did: a line on stderr, or one JSON object on stdout."""
    if as_json:
        render.print_json(body)
    else:
        render.progress(text)


@click.command("stop-broker")
@dir_option
@click.option("--cluster", required=True, metavar="NAME", help="The sandbox cluster.")
@click.option(
    "--broker", type=click.IntRange(0), required=True, metavar="ID", help="The broker's id."
)
@click.option("--kill", is_flag=True, help="SIGKILL (no controlled shutdown).")
@json_option
def stop_broker(
    directory: Path | None, cluster: str, broker: int, kill: bool, as_json: bool
) -> None:
    """Stop one broker of a sandbox cluster; `sandbox up --cluster NAME` starts it again."""
    from kmigrate.config import sandbox_dir
    from kmigrate.sandbox import manager

    manager.stop_broker(directory or sandbox_dir(), cluster, broker, kill=kill)
    done(
        as_json,
        f"broker {broker} of {cluster} {'killed' if kill else 'stopped'}",
        {"cluster": cluster, "broker": broker, "killed": kill},
    )


# The sandbox's stand-ins for an operator's own scripts on real hosts: what the
# `zk migrate --restart-command/--zk-stop-command/--zk-start-command` templates call.


@click.command("restart-broker")
@dir_option
@click.option("--cluster", required=True, metavar="NAME", help="The sandbox cluster.")
@click.option(
    "--broker", type=click.IntRange(0), required=True, metavar="ID", help="The broker's id."
)
@click.option(
    "--zookeeper-connect",
    required=True,
    metavar="CONNECT",
    help="The broker's new zookeeper.connect (host:port,...).",
)
@json_option
def restart_broker(
    directory: Path | None, cluster: str, broker: int, zookeeper_connect: str, as_json: bool
) -> None:
    """Restart one ZooKeeper-mode broker with a new zookeeper.connect."""
    from kmigrate.config import sandbox_dir
    from kmigrate.sandbox.zk_operator import SandboxOperator

    SandboxOperator(directory or sandbox_dir(), cluster).restart_broker(broker, zookeeper_connect)
    done(
        as_json,
        f"broker {broker} of {cluster} restarted on {zookeeper_connect}",
        {"cluster": cluster, "broker": broker, "zookeeper_connect": zookeeper_connect},
    )


_server_id_option = click.option(
    "--id",
    "node_id",
    type=click.IntRange(0),
    required=True,
    metavar="ID",
    help="The ZooKeeper server's id (myid).",
)


@click.command("stop-zk-server")
@dir_option
@_server_id_option
@json_option
def stop_zk_server(directory: Path | None, node_id: int, as_json: bool) -> None:
    """Stop one ZooKeeper server of the sandbox."""
    from kmigrate.config import sandbox_dir
    from kmigrate.sandbox.zk_operator import SandboxOperator

    SandboxOperator(directory or sandbox_dir()).stop_server(node_id)
    done(as_json, f"ZooKeeper server {node_id} stopped", {"id": node_id, "running": False})


@click.command("start-zk-server")
@dir_option
@_server_id_option
@click.option(
    "--dynamic-file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    required=True,
    help="server.N=... lines: the participants it starts with.",
)
@click.option("--fresh", type=click.BOOL, default=False, help="Empty its data first.")
@json_option
def start_zk_server(
    directory: Path | None, node_id: int, dynamic_file: Path, fresh: bool, as_json: bool
) -> None:
    """(Re)start one ZooKeeper server of the sandbox with the given participants."""
    from kmigrate.config import read_user_file, sandbox_dir
    from kmigrate.sandbox.zk_operator import SandboxOperator

    text = read_user_file(dynamic_file, "--dynamic-file")
    try:
        members = [parse_member(line).node_id for line in text.splitlines() if line.strip()]
    except ConfigError as exc:
        raise ConfigError(f"--dynamic-file {dynamic_file}: {exc}") from None
    SandboxOperator(directory or sandbox_dir()).start_server(node_id, members, fresh=fresh)
    done(
        as_json,
        f"ZooKeeper server {node_id} started with servers {members}",
        {"id": node_id, "running": True, "servers": members},
    )

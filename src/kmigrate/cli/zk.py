"""`kmigrate zk plan`: moving a ZooKeeper-mode Kafka cluster to another ensemble."""

from __future__ import annotations

from pathlib import Path

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, json_option, pass_app
from kmigrate.errors import ConflictError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.zk.ensemble import chroot_of, read_ensemble, read_kafka, resolve_ensemble
from kmigrate.zk.plan import plan_move


@click.group("zk")
def group() -> None:
    """Move a ZooKeeper-mode Kafka cluster to another ZooKeeper ensemble (no downtime)."""


@group.command("plan")
@click.option("--kafka", "kafka", required=True, metavar="CLUSTER", help="The Kafka cluster.")
@click.option(
    "--from", "source", required=True, metavar="ENSEMBLE|CONNECT", help="Its ensemble now."
)
@click.option(
    "--to", "target", required=True, metavar="ENSEMBLE|CONNECT", help="The (empty) new ensemble."
)
@click.option("--chroot", metavar="/PATH", help="Kafka's chroot (default: the brokers' own).")
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), required=True, help="Plan file to write."
)
@click.option("--force", is_flag=True, help="Overwrite an existing plan file.")
@json_option
@pass_app
def plan(
    app: AppContext,
    kafka: str,
    source: str,
    target: str,
    chroot: str | None,
    output: Path,
    force: bool,
    as_json: bool,
) -> None:
    """Check both ensembles and the cluster, and write the ordered steps with their guards.
    Nothing changes."""
    settings = app.settings
    cluster = settings.cluster(kafka)
    source_cfg, target_cfg = resolve_ensemble(settings, source), resolve_ensemble(settings, target)
    if output.exists() and not force:
        raise ConflictError(f"{output} exists; pass --force to overwrite it")
    with ClusterAdmin(cluster) as admin:
        probe = read_kafka(admin, source_cfg, "")
        root = chroot if chroot is not None else chroot_of(probe.zookeeper_connect)
        state = read_kafka(admin, source_cfg, root) if root else probe
    move = plan_move(read_ensemble(source_cfg), read_ensemble(target_cfg), state, root)
    output.write_text(move.to_yaml(str(output)))
    if as_json:
        render.print_json({"plan": str(output), **move.model_dump(mode="json")})
        return
    render.out.print(
        f"wrote {output}: move cluster {kafka} ({len(move.brokers)} broker(s), chroot "
        f"{move.chroot or '/'}) from {move.source.name} to {move.target.name}; target servers "
        f"{','.join(map(str, move.join_first))} join first"
        + (
            f", {','.join(map(str, move.join_after_split))} after the split"
            if move.join_after_split
            else ""
        ),
        soft_wrap=True,
    )
    for step in move.steps:
        render.out.print(f"  {step.phase}: {step.action}", soft_wrap=True)

"""`kmigrate zk plan`: moving a ZooKeeper-mode Kafka cluster to another ensemble."""

from __future__ import annotations

from pathlib import Path

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, pass_app, plan_output_options
from kmigrate.cli.operations import acting, choose_operator, print_history
from kmigrate.cli.options import json_option
from kmigrate.config import Settings
from kmigrate.errors import ConflictError, NotFoundError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.sandbox.zk_operator import SandboxOperator
from kmigrate.store import store_for
from kmigrate.zk.cleanup import delete, leftovers
from kmigrate.zk.commands import CommandOperator, Templates
from kmigrate.zk.members import parse_member
from kmigrate.zk.move import Move, ensemble_move, rollback_move, run_move
from kmigrate.zk.operator import Operator
from kmigrate.zk.plan import ZkMovePlan, load_plan, parse_plan, plan_move
from kmigrate.zk.report import status_json
from kmigrate.zk.world import chroot_of, read_ensemble, read_kafka
from kmigrate.zookeeper.ensemble import resolve_ensemble

kafka_option = click.option(
    "--kafka", "kafka", required=True, metavar="CLUSTER", help="The ZooKeeper-mode Kafka cluster."
)


@click.group("zk")
def group() -> None:
    """Move a ZooKeeper-mode Kafka cluster to another ZooKeeper ensemble (no downtime)."""


@group.command("plan")
@kafka_option
@click.option(
    "--from", "source", required=True, metavar="ENSEMBLE|CONNECT", help="Its ensemble now."
)
@click.option(
    "--to", "target", required=True, metavar="ENSEMBLE|CONNECT", help="The (empty) new ensemble."
)
@click.option("--chroot", metavar="/PATH", help="Kafka's chroot (default: the brokers' own).")
@plan_output_options
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


@group.command("migrate")
@click.argument("plan_file", type=click.Path(path_type=Path))
@click.option(
    "--timeout",
    type=click.FloatRange(1),
    default=180.0,
    show_default=True,
    help="Seconds to wait for any one condition (a server syncing, a broker registering).",
)
@click.option(
    "--rollback",
    is_flag=True,
    help="Before the split: brokers back on the source ensemble, the target empty again.",
)
@click.option(
    "--restart-command",
    metavar="TEMPLATE",
    help="Real hosts: restart one broker with a new zookeeper.connect, e.g. "
    "'ssh {host} sudo kafka-switch-zk {zookeeper_connect}'. Placeholders {host} {broker} "
    "{zookeeper_connect}.",
)
@click.option(
    "--zk-stop-command",
    metavar="TEMPLATE",
    help="Real hosts: stop one ZooKeeper server. Placeholders {host} {id}.",
)
@click.option(
    "--zk-start-command",
    metavar="TEMPLATE",
    help="Real hosts: start one ZooKeeper server with the server lines in {dynamic_file} as "
    "its zoo.cfg.dynamic, its data emptied first if {fresh} is true. Placeholders {host} "
    "{id} {dynamic_file} {fresh}.",
)
@pass_app
def migrate(
    app: AppContext,
    plan_file: Path,
    timeout: float,
    rollback: bool,
    restart_command: str | None,
    zk_stop_command: str | None,
    zk_start_command: str | None,
) -> None:
    """Run the plan's phases (join, check, switch, split), one guarded step at a time.
    Resumable: after any interruption, run the same command again. In the sandbox,
    kmigrate restarts servers and brokers itself; on real hosts it runs your templates."""
    plan = load_plan(plan_file)
    settings = app.settings
    templates = Templates(restart_command, zk_stop_command, zk_start_command)
    op = ensemble_move(store_for(settings), plan.kafka, render.progress)
    command = f"zk migrate {plan_file.name}" + (" --rollback" if rollback else "")
    with acting(op, command, settings.cluster(plan.kafka)) as (admin, status):
        operator = _operator(settings, plan, templates)
        move = Move(plan, plan_file.read_text(), op, operator, admin, timeout, status)
        (rollback_move if rollback else run_move)(move)


def _operator(settings: Settings, plan: ZkMovePlan, templates: Templates) -> Operator:
    """Who restarts servers and brokers: the operator's templates when given, else the
    sandbox when it runs this cluster."""

    def by_templates() -> Operator:
        members = [parse_member(line) for line in (*plan.source.members, *plan.target.members)]
        return CommandOperator(templates, members, plan.broker_hosts, render.progress)

    return choose_operator(
        settings,
        plan.kafka,
        templates.given,
        by_templates,
        lambda folder: SandboxOperator(folder, plan.kafka),
        "--restart-command, --zk-stop-command and --zk-start-command (README: moving to a "
        "new ZooKeeper ensemble)",
    )


@group.command("status")
@kafka_option
@json_option
@pass_app
def status(app: AppContext, kafka: str, as_json: bool) -> None:
    """Where the cluster's ZooKeeper move stands."""
    move = ensemble_move(store_for(app.settings), kafka).get()
    if move is None:
        raise NotFoundError(f"no ZooKeeper move of cluster '{kafka}'; start one with zk migrate")
    body = status_json(move)
    if as_json:
        render.print_json(body)
        return
    render.out.print(
        f"cluster {kafka}: ZooKeeper move {body['from']} -> {body['to']}, "
        f"phase reached: {move.phase}"
    )


@group.command("history")
@kafka_option
@json_option
@pass_app
def history_command(app: AppContext, kafka: str, as_json: bool) -> None:
    """Every step of the cluster's ZooKeeper move, in order."""
    print_history(kafka, ensemble_move(store_for(app.settings), kafka).history(), as_json)


@group.command("cleanup")
@kafka_option
@click.option("--yes", is_flag=True, help="Delete without asking (the list is still shown).")
@json_option
@pass_app
def cleanup(app: AppContext, kafka: str, yes: bool, as_json: bool) -> None:
    """After the move: delete Kafka's stale copy from the source ensemble and the source's
    other paths from the target, each listed and confirmed first."""
    op = ensemble_move(store_for(app.settings), kafka, render.progress)
    move = op.get()
    if move is None or move.phase != "done":
        raise ConflictError(
            f"cluster '{kafka}' has no finished ZooKeeper move"
            + (f" (phase {move.phase})" if move else "")
            + "; clean-up comes after `zk migrate` ends"
        )
    plan = parse_plan(move.plan_yaml, "the stored plan")
    found = leftovers(plan)
    sides = [
        (plan.source.name, plan.source.connect, found.source_paths, "Kafka's stale copy"),
        (plan.target.name, plan.target.connect, found.target_paths, "the source's other data"),
    ]
    deleted: dict[str, list[str]] = {}
    with op.exclusively("zk cleanup"):
        for name, connect, paths, what in sides:
            if not paths:
                continue
            if not as_json:
                render.out.print(f"{name}: {what}: {', '.join(paths)}")
            if yes or click.confirm(f"delete these from {name} (recursively)?", default=False):
                delete(connect, name, paths)
                deleted[name] = paths
    if as_json:
        render.print_json({"kafka": kafka, "deleted": deleted})
    elif not deleted:
        render.out.print("nothing deleted")

"""`kmigrate zk plan`: moving a ZooKeeper-mode Kafka cluster to another ensemble.

The move's use cases are imported by the commands that run them: `kmigrate zk --help`
loads this module and should not load the Kafka, ZooKeeper or store clients.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, pass_app, plan_output_options
from kmigrate.cli.operations import (
    acting,
    choose_operator,
    cluster_flag,
    print_history,
    read_plan,
    zk_path,
)
from kmigrate.cli.options import (
    confirm,
    confirm_options,
    json_option,
    renamed,
    require,
    timeout_option,
)
from kmigrate.cli.plan_output import writable
from kmigrate.errors import ConflictError

if TYPE_CHECKING:
    from kmigrate.config import Settings
    from kmigrate.ensemble_move.commands import Templates
    from kmigrate.ensemble_move.operator import Operator
    from kmigrate.ensemble_move.plan import ZkMovePlan


@click.group("zk")
def group() -> None:
    """Move a ZooKeeper-mode Kafka cluster to another ZooKeeper ensemble (no downtime)."""


@group.command("plan")
@cluster_flag
@click.option("--source-ensemble", "source", metavar="ENSEMBLE|CONNECT", help="Its ensemble now.")
@click.option(
    "--target-ensemble", "target", metavar="ENSEMBLE|CONNECT", help="The (empty) new ensemble."
)
@renamed("--from", "--source-ensemble", "source")
@renamed("--to", "--target-ensemble", "target")
@click.option("--chroot", metavar="/PATH", help="Kafka's chroot (default: the brokers' own).")
@plan_output_options
@json_option
@pass_app
def plan(
    app: AppContext,
    cluster_name: str | None,
    source: str | None,
    target: str | None,
    chroot: str | None,
    output: Path,
    force: bool,
    as_json: bool,
) -> None:
    """Check both ensembles and the cluster, and write the ordered steps with their guards.
    Nothing changes."""
    from kmigrate.ensemble_move.plan import plan_move
    from kmigrate.ensemble_move.world import chroot_of, read_ensemble, read_kafka

    kafka = require(cluster_name, "--cluster")
    source, target = require(source, "--source-ensemble"), require(target, "--target-ensemble")
    root_given = zk_path(chroot, "--chroot") if chroot is not None else None
    settings = app.settings
    cluster = settings.cluster(kafka)
    source_cfg, target_cfg = app.workspace.ensemble(source), app.workspace.ensemble(target)
    writable(output, force)
    with app.workspace.admin(cluster) as admin:
        probe = read_kafka(admin, source_cfg, "")
        root = root_given if root_given is not None else chroot_of(probe.zookeeper_connect)
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
@timeout_option(
    "180s", help="How long to wait for any one condition (a server syncing, a broker registering)."
)
@click.option(
    "--rollback",
    is_flag=True,
    help="Before the split: brokers back on the source ensemble, the target empty again "
    "(asks first; --yes for scripts).",
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
@confirm_options
@json_option
@pass_app
def migrate(
    app: AppContext,
    plan_file: Path,
    timeout: float,
    rollback: bool,
    restart_command: str | None,
    zk_stop_command: str | None,
    zk_start_command: str | None,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Run the plan's phases (join, check, switch, split), one guarded step at a time.
    Resumable: after any interruption, run the same command again. In the sandbox,
    kmigrate restarts servers and brokers itself; on real hosts it runs your templates.

    --dry-run shows the phases and steps it would run and changes nothing. --rollback
    (before the split) shows what it would undo and goes ahead only with --yes or a "y"
    on a terminal; the forward migration needs no --yes."""
    from kmigrate.ensemble_move.commands import Templates
    from kmigrate.ensemble_move.move import Move, ensemble_move, rollback_move, run_move
    from kmigrate.ensemble_move.plan import parse_plan

    plan = read_plan(plan_file, parse_plan)
    settings = app.settings
    cluster = settings.cluster(plan.kafka)
    templates = Templates(restart_command, zk_stop_command, zk_start_command)
    operator = _operator(settings, plan, templates)
    if dry_run or rollback:
        _show_intent(plan, rollback, as_json)
        if not rollback:
            click.echo("dry run: nothing changed; rerun without --dry-run to run it", err=True)
            return
        if not confirm(_intent(plan, rollback), dry_run=dry_run, yes=yes):
            return
    op = ensemble_move(app.workspace.store, plan.kafka, render.progress)
    command = f"zk migrate {plan_file.name}" + (" --rollback" if rollback else "")
    with acting(op, command, lambda: app.workspace.admin(cluster)) as (admin, status):
        move = Move(plan, plan_file.read_text(), op, operator, admin, timeout, status)
        (rollback_move if rollback else run_move)(move)
    if as_json:
        record = op.get()
        render.print_json({"kafka": plan.kafka, "phase": record.phase if record else None})


def _intent(plan: ZkMovePlan, rollback: bool) -> str:
    if rollback:
        return (
            f"roll back the ZooKeeper move of cluster {plan.kafka}: brokers back on "
            f"{plan.source.name}, {plan.target.name} empty again"
        )
    return f"move cluster {plan.kafka} from {plan.source.name} to {plan.target.name}"


def _show_intent(plan: ZkMovePlan, rollback: bool, as_json: bool) -> None:
    """What the run would do: the plan's steps forward, or the roll-back."""
    steps = [] if rollback else [{"phase": s.phase, "action": s.action} for s in plan.steps]
    if as_json:
        render.print_json({"kafka": plan.kafka, "would": _intent(plan, rollback), "steps": steps})
        return
    render.out.print(f"would {_intent(plan, rollback)}", soft_wrap=True)
    for step in steps:
        render.out.print(f"  {step['phase']}: {step['action']}", soft_wrap=True)


def _operator(settings: Settings, plan: ZkMovePlan, templates: Templates) -> Operator:
    """Who restarts servers and brokers: the operator's templates when given (checked
    here, before anything runs), else the sandbox when it runs this cluster."""
    from kmigrate.ensemble_move.commands import CommandOperator
    from kmigrate.ensemble_move.members import parse_member
    from kmigrate.sandbox.zk_operator import SandboxOperator

    if templates.given:
        templates.check()

    def by_templates() -> Operator:
        members = [parse_member(line) for line in (*plan.source.members, *plan.target.members)]
        return CommandOperator(templates, members, plan.broker_hosts, render.progress)

    return choose_operator(
        settings,
        plan.kafka,
        templates.given,
        by_templates,
        lambda folder: SandboxOperator(folder, plan.kafka),
        "--restart-command, --zk-stop-command and --zk-start-command "
        "(docs/how-to/zookeeper-ensemble.md)",
    )


@group.command("status")
@cluster_flag
@json_option
@pass_app
def status(app: AppContext, cluster_name: str | None, as_json: bool) -> None:
    """Where the cluster's ZooKeeper move stands (nothing yet: an empty answer, exit 0)."""
    from kmigrate.ensemble_move.move import ensemble_move
    from kmigrate.ensemble_move.report import status_json

    kafka = require(cluster_name, "--cluster")
    app.settings.cluster(kafka)
    move = ensemble_move(app.workspace.store, kafka).get()
    if move is None:
        if as_json:
            render.print_json({"kafka": kafka, "phase": None})
        else:
            render.out.print(f"cluster {kafka}: no ZooKeeper move yet (start one with zk plan)")
        return
    body = status_json(move)
    if as_json:
        render.print_json(body)
        return
    render.out.print(
        f"cluster {kafka}: ZooKeeper move {body['from']} -> {body['to']}, "
        f"phase reached: {move.phase}"
    )


@group.command("history")
@cluster_flag
@json_option
@pass_app
def history_command(app: AppContext, cluster_name: str | None, as_json: bool) -> None:
    """Every step of the cluster's ZooKeeper move, in order."""
    from kmigrate.ensemble_move.move import ensemble_move

    kafka = require(cluster_name, "--cluster")
    app.settings.cluster(kafka)
    print_history(kafka, ensemble_move(app.workspace.store, kafka).history(), as_json)


@group.command("cleanup")
@cluster_flag
@confirm_options
@json_option
@pass_app
def cleanup(
    app: AppContext, cluster_name: str | None, dry_run: bool, yes: bool, as_json: bool
) -> None:
    """After the move: delete Kafka's stale copy from the source ensemble and the source's
    other paths from the target. Lists them first; deletes only with --yes or a "y" on a
    terminal."""
    from kmigrate.ensemble_move.cleanup import delete, leftovers
    from kmigrate.ensemble_move.move import ensemble_move
    from kmigrate.ensemble_move.plan import parse_plan

    kafka = require(cluster_name, "--cluster")
    app.settings.cluster(kafka)
    op = ensemble_move(app.workspace.store, kafka, render.progress)
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
    listed = {name: paths for name, _, paths, _ in sides if paths}
    if not as_json:
        for name, _, paths, what in sides:
            if paths:
                render.out.print(f"{name}: {what}: {', '.join(paths)}", soft_wrap=True)
    deleted: dict[str, list[str]] = {}
    action = "delete these paths (recursively) from " + " and ".join(listed)
    if listed and confirm(action, dry_run=dry_run, yes=yes):
        with op.exclusively("zk cleanup"):
            for name, connect, paths, _ in sides:
                if paths:
                    delete(connect, name, paths)
                    deleted[name] = paths
    if as_json:
        render.print_json({"kafka": kafka, "found": listed, "deleted": deleted})
    elif not deleted:
        render.out.print("nothing deleted")

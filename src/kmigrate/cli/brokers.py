"""`kmigrate brokers list | add | drain | elect`: what each broker holds, and adding,
draining or electing leaders, planned and applied as `kmigrate reassign` does.

Broker ids and --throttle are checked before a cluster is contacted; `brokers add` and
`brokers drain` show what they would change and go ahead only with --yes (or a "y" on a
terminal). As in cli/reassign.py, what reads and moves replicas is imported by the
commands that use it: `kmigrate brokers --help` should not load the Kafka clients."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, pass_app
from kmigrate.cli.options import confirm, confirm_options, json_option
from kmigrate.cli.reassign import (
    apply_plan,
    broker_ids,
    cluster_option,
    only_topics,
    plan_for,
    print_summary,
)
from kmigrate.reassign.planner import Goal
from kmigrate.reassign.throttles import parse_rate


@click.group("brokers")
def brokers_group() -> None:
    """Brokers: what each holds, and adding, draining or electing leaders."""


@brokers_group.command("list")
@cluster_option
@json_option
@pass_app
def brokers_list(app: AppContext, cluster_name: str, as_json: bool) -> None:
    """Per broker: rack, replicas, leaders, preferred leaders, bytes on disk, alive."""
    from kmigrate.reassign.brokers import broker_rows, imbalance

    cluster = app.settings.cluster(cluster_name)
    with app.workspace.admin(cluster) as admin, app.workspace.reassignments(cluster) as kafka:
        rows = broker_rows(admin, kafka)
    replicas, uneven = imbalance(rows)
    if as_json:
        render.print_json(
            {
                "cluster": cluster_name,
                "brokers": rows,
                "replicas": replicas,
                "imbalance": uneven,
            }
        )
        return
    render.table(
        f"cluster {cluster_name}: {replicas} replicas; most minus fewest per live broker: {uneven}",
        ["broker", "rack", "alive", "replicas", "leaders", "preferred", "MiB"],
        [
            (
                r.id,
                r.rack or "",
                "yes" if r.alive else "NO",
                r.replicas,
                r.leaders,
                r.preferred_leaders,
                f"{r.bytes / 2**20:.1f}",
            )
            for r in rows
        ],
    )


def _plan_and_apply(
    app: AppContext, cluster_name: str, goal: Goal, throttle: int | None, flags: Confirm
) -> None:
    from kmigrate.reassign import plan_file

    result = plan_for(app, cluster_name, goal)
    answer: dict[str, object] = {"cluster": cluster_name, "goal": goal.describe()}
    answer |= plan_file.summary(result)
    if not flags.as_json:
        print_summary(result, goal.describe())
    action = f"move {len(result.moves)} partition(s) of cluster '{cluster_name}'"
    if not result.moves or not confirm(action, dry_run=flags.dry_run, yes=flags.yes):
        if flags.as_json:
            render.print_json(answer | {"applied": None})
        return
    folder = app.settings.path.parent if app.settings.path else Path.cwd()
    path = folder / f"reassign-{cluster_name}.json"
    path.write_text(plan_file.to_json(result, cluster_name))
    render.progress(f"plan saved as {path} (for `reassign apply --resume`)")
    applied = apply_plan(app, path, cluster_name, throttle, 10, wait=True, resume=False)
    if flags.as_json:
        render.print_json(answer | {"applied": applied})


@dataclass(frozen=True)
class Confirm:
    dry_run: bool
    yes: bool
    as_json: bool


def _plan_and_apply_command(name: str, kind: str, doc: str) -> None:
    """`brokers drain` and `brokers add`: one goal each, planned, confirmed, applied."""

    @brokers_group.command(name, help=doc)
    @click.argument("ids")
    @cluster_option
    @click.option("--throttle", default="auto", show_default=True, metavar="RATE|auto",
                  help="Replication rate per broker, e.g. 50MB; auto: measured.")  # fmt: skip
    @confirm_options
    @json_option
    @pass_app
    def command(
        app: AppContext,
        ids: str,
        cluster_name: str,
        throttle: str,
        dry_run: bool,
        yes: bool,
        as_json: bool,
    ) -> None:
        goal = Goal(kind, brokers=broker_ids(ids, "IDS"))
        rate = parse_rate(throttle)
        _plan_and_apply(app, cluster_name, goal, rate, Confirm(dry_run, yes, as_json))


_plan_and_apply_command(
    "drain",
    "drain",
    "Move every replica off the brokers IDS (e.g. 2,3): plan, show it, then with --yes "
    '(or a "y" on a terminal) apply it and wait.',
)
_plan_and_apply_command(
    "add",
    "add",
    "Spread replicas onto the new brokers IDS (e.g. 4,5): plan, show it, then with --yes "
    '(or a "y" on a terminal) apply it and wait.',
)


@brokers_group.command("elect")
@cluster_option
@click.option("--preferred", is_flag=True, required=True, help="Preferred leader election.")
@only_topics
@json_option
@pass_app
def brokers_elect(
    app: AppContext, cluster_name: str, preferred: bool, topics: str | None, as_json: bool
) -> None:
    """Move leadership back to each partition's preferred (first) replica."""
    from kmigrate.reassign import applied

    cluster = app.settings.cluster(cluster_name)
    with app.workspace.admin(cluster) as admin, app.workspace.reassignments(cluster) as kafka:
        count = applied.elect_preferred(admin, kafka, topics)
    if as_json:
        render.print_json({"cluster": cluster_name, "partitions": count})
        return
    render.out.print(f"asked for the preferred leader of {count} partition(s)")

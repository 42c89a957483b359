"""`kmigrate reassign plan | apply | status | cancel`: moving replicas between brokers
(`kmigrate brokers ...` is cli/brokers.py, on the same planner and executor).

Every flag and file (broker ids, --throttle, --max-moves, the plan) is checked before a
cluster is contacted; `reassign cancel` shows what it would change and goes ahead only
with --yes (or a "y" on a terminal). The executor and the plan file are imported by the
commands that use them: `kmigrate reassign --help` should not load the Kafka clients or
the store."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from kmigrate.cli import outages, render
from kmigrate.cli.context import AppContext, int_list, pass_app, plan_output_options
from kmigrate.cli.options import (
    confirm,
    confirm_options,
    json_option,
    max_unavailable_option,
    topics_option,
)
from kmigrate.cli.plan_output import writable
from kmigrate.errors import ConfigError
from kmigrate.reassign.planner import BALANCES, Goal, ReassignPlan
from kmigrate.reassign.throttles import parse_rate

if TYPE_CHECKING:
    from kmigrate.reassign.model import Spread
    from kmigrate.waiting import WaitPolicy

cluster_option = click.option(
    "--cluster", "cluster_name", required=True, metavar="CLUSTER", help="Cluster name."
)
only_topics = topics_option(help="Only topics matching this regex (whole name).")


def broker_ids(value: str | None, option: str) -> tuple[int, ...]:
    """Broker ids such as ``4,5``: numbers, 0 or more, at least one."""
    if value is None:
        return ()
    ids = int_list(value, option)
    if not ids or any(i < 0 for i in ids):
        raise ConfigError(f"{option} {value}: give broker ids like 4,5 (numbers, 0 or more)")
    return tuple(ids)


# ---------------------------------------------------------------- reassign


@click.group("reassign")
def group() -> None:
    """Move replicas between brokers: plan (changes nothing), apply, follow, cancel."""


@group.command("plan")
@cluster_option
@click.option("--add-brokers", metavar="ID,ID", help="Spread replicas onto these new brokers.")
@click.option("--drain", metavar="ID,ID", help="Move every replica off these brokers.")
@click.option("--rebalance", is_flag=True, help="Even out replicas and leaders.")
@click.option("--replication-factor", type=click.IntRange(1), help="Change it (with --topics).")
@click.option("--fix-offline", is_flag=True, help="Move replicas off dead brokers.")
@click.option(
    "--from-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A kafka-reassign-partitions JSON file.",
)
@only_topics
@click.option(
    "--balance",
    type=click.Choice(BALANCES),
    default="bytes",
    show_default=True,
    help="bytes: replica counts even and every broker's bytes within 10% of the mean; "
    "replicas: counts alone, the fewest moves.",
)
@plan_output_options
@json_option
@pass_app
def plan(
    app: AppContext,
    cluster_name: str,
    add_brokers: str | None,
    drain: str | None,
    rebalance: bool,
    replication_factor: int | None,
    fix_offline: bool,
    from_file: Path | None,
    topics: str | None,
    balance: str,
    output: Path,
    force: bool,
    as_json: bool,
) -> None:
    """Write the fewest replica moves that reach ONE goal, with a summary. Nothing
    changes."""
    from kmigrate.reassign import plan_file

    add, drained = broker_ids(add_brokers, "--add-brokers"), broker_ids(drain, "--drain")
    candidates: list[tuple[Goal | None, object]] = [
        (Goal("add", brokers=add, topics=topics, balance=balance), add_brokers),
        (Goal("drain", brokers=drained, topics=topics, balance=balance), drain),
        (Goal("rebalance", topics=topics, balance=balance), rebalance),
        (
            Goal(
                "replication-factor",
                replication_factor=replication_factor,
                topics=topics,
                balance=balance,
            ),
            replication_factor,
        ),
        (Goal("fix-offline", topics=topics, balance=balance), fix_offline),
        (plan_file.file_goal(from_file) if from_file else None, from_file),
    ]
    goals = [g for g, given in candidates if given and g is not None]
    if len(goals) != 1:
        raise ConfigError(
            "give exactly one goal: --add-brokers, --drain, --rebalance, --replication-factor, "
            "--fix-offline or --from-file"
        )
    writable(output, force)
    result = plan_for(app, cluster_name, goals[0])
    output.write_text(plan_file.to_json(result, cluster_name))
    if as_json:
        render.print_json({"plan": str(output), **plan_file.summary(result)})
        return
    print_summary(result, f"wrote {output}: {result.goal.describe()}")


def plan_for(app: AppContext, cluster_name: str, goal: Goal) -> ReassignPlan:
    """``goal`` planned on the cluster as it is now."""
    from kmigrate.reassign import applied

    cluster = app.cluster(cluster_name)
    with app.workspace.admin(cluster) as admin, app.workspace.reassignments(cluster) as kafka:
        return applied.plan_for(admin, kafka, goal)


def print_summary(result: ReassignPlan, headline: str) -> None:
    if not result.moves:
        render.out.print(f"{headline}; nothing to move: the goal is already met")
        return
    render.out.print(
        f"{headline}; {len(result.moves)} partition(s), {result.replicas_moved} replica(s) "
        f"to move, {result.bytes_to_copy / 2**20:.1f} MiB to copy",
        soft_wrap=True,
    )
    _spread_table(result.before, result.after)


def _spread_table(before: Spread, after: Spread) -> None:
    from kmigrate.reassign import plan_file

    table = plan_file.spread_table(before, after)
    render.table(
        None,
        ["broker", "replicas", "preferred leaders", "MiB"],
        [
            (
                b,
                f"{row['replicas_before']} -> {row['replicas_after']}",
                f"{row['leaders_before']} -> {row['leaders_after']}",
                f"{row['bytes_before'] / 2**20:.1f} -> {row['bytes_after'] / 2**20:.1f}",
            )
            for b, row in table.items()
        ],
    )


@group.command("apply")
@click.argument("plan_path", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--cluster", "cluster_name", metavar="CLUSTER", help="Default: the plan's.")
@click.option(
    "--throttle",
    default="auto",
    show_default=True,
    metavar="RATE|auto",
    help="Replication rate per broker for the moving replicas, e.g. 50MB; auto: from "
    "the producers' measured rate into the moving partitions.",
)
@click.option("--max-moves", type=click.IntRange(1), default=10, show_default=True,
              help="Partitions in flight at once (with --wait).")  # fmt: skip
@click.option("--wait", is_flag=True, help="Follow it to the end (progress, leaders, throttles).")
@click.option("--resume", is_flag=True, help="Continue the cluster's reassignment under way.")
@max_unavailable_option("15m")
@json_option
@pass_app
def apply(
    app: AppContext,
    plan_path: Path,
    cluster_name: str | None,
    throttle: str,
    max_moves: int,
    wait: bool,
    resume: bool,
    max_unavailable: float,
    as_json: bool,
) -> None:
    """Submit the plan through KIP-455 with throttles on the moving replicas only.

    With --wait, a cluster that stops answering (a broker restarting, a controller
    election) is waited out for up to --max-unavailable; the moves go on meanwhile."""
    done = apply_plan(
        app, plan_path, cluster_name, parse_rate(throttle), max_moves, wait, resume,
        max_unavailable,
    )  # fmt: skip
    if as_json:
        render.print_json(done)
    elif done["state"] == "nothing-to-move":
        render.out.print(f"{plan_path} moves nothing: the goal was already met")
    elif done["state"] == "submitted":
        render.out.print(
            f"submitted; follow with `kmigrate reassign status --cluster {done['cluster']}` "
            "(it removes the throttles once every partition moved)"
        )


def apply_plan(
    app: AppContext,
    plan_path: Path,
    cluster_name: str | None,
    throttle: int | None,
    max_moves: int,
    wait: bool,
    resume: bool,
    max_unavailable: float = 900.0,
) -> dict[str, object]:
    """Check the plan file, its cluster and the store, then submit (and with ``wait``
    follow) it; ``throttle`` None: measured. An outage shorter than ``max_unavailable``
    seconds is waited out."""
    from kmigrate.reassign import applied, execute, plan_file

    mine, moves = plan_file.load(plan_path)
    name = cluster_name or mine.get("cluster")
    if not name:
        raise ConfigError(f"{plan_path} names no cluster; pass --cluster")
    cluster = app.settings.cluster(name)
    answer: dict[str, object] = {"cluster": name, "plan": str(plan_path), "partitions": len(moves)}
    if not moves:
        return answer | {"state": "nothing-to-move"}
    store = app.workspace.store
    start = applied.Start(
        name, plan_path.read_text(), moves, mine, throttle, max_moves, resume=resume
    )
    found = applied.resumable(store, start)
    with (
        app.workspace.admin(cluster) as admin,
        app.workspace.reassignments(cluster) as kafka,
        render.StatusLine() as line,
    ):
        run = execute.Run(name, admin, kafka, store, moves, render.progress, line.update)
        run.patiently = _patience(name, max_unavailable).run
        finished, rate = applied.apply(run, start, found, wait)
    return answer | {
        "state": "finished" if finished else "submitted",
        "throttle_bytes_per_s": rate,
    }


@group.command("status")
@cluster_option
@json_option
@pass_app
def status(app: AppContext, cluster_name: str, as_json: bool) -> None:
    """Where the cluster's reassignment stands; a finished one is concluded here
    (leaders elected, throttles removed). None yet: says so (exit 0)."""
    from kmigrate.reassign import applied

    cluster = app.settings.cluster(cluster_name)
    store = app.workspace.store
    found = applied.under_way(store, cluster_name)
    if found is None:
        if as_json:
            render.print_json({"cluster": cluster_name, "state": None, "partitions": {}})
        else:
            render.out.print(f"cluster {cluster_name}: no reassignment applied by kmigrate yet")
        return
    if found.state == "running":
        with app.workspace.admin(cluster) as admin, app.workspace.reassignments(cluster) as kafka:
            found = applied.follow(store, found, admin, kafka, render.progress)
    body = applied.status(store, found)
    if as_json:
        render.print_json(body)
        return
    render.out.print(
        f"cluster {cluster_name}: reassignment {found.state}; "
        + ", ".join(f"{n} {s}" for s, n in sorted(body["partitions"].items()))
    )


@group.command("cancel")
@cluster_option
@confirm_options
@json_option
@pass_app
def cancel(app: AppContext, cluster_name: str, dry_run: bool, yes: bool, as_json: bool) -> None:
    """Cancel the partitions still moving (KIP-455) and remove the throttles: shows what
    it would cancel, goes ahead with --yes (or a "y" on a terminal)."""
    from kmigrate.reassign import applied

    cluster = app.settings.cluster(cluster_name)
    store = app.workspace.store
    found = applied.running(store, cluster_name)
    moving = applied.moving(store, cluster_name)
    action = (
        f"cancel the reassignment of cluster '{cluster_name}' ({len(moving)} partition(s) "
        "moving now; the rest are not submitted) and remove its throttles"
    )
    if not as_json:
        render.out.print(f"this would {action}", soft_wrap=True)
    if not confirm(action, dry_run=dry_run, yes=yes):
        if as_json:
            render.print_json({"cluster": cluster_name, "cancelled": [], "would_cancel": moving})
        return
    with app.workspace.admin(cluster) as admin, app.workspace.reassignments(cluster) as kafka:
        cancelled = applied.cancel(store, found, admin, kafka, render.progress)
    if as_json:
        render.print_json({"cluster": cluster_name, "cancelled": cancelled, "would_cancel": []})
        return
    render.out.print(f"cancelled {len(cancelled)} moving partition(s); throttles removed")


def _patience(cluster: str, max_unavailable: float) -> WaitPolicy:
    """Waits out an outage of ``cluster`` for up to ``max_unavailable`` seconds, saying
    when it starts and ends."""
    return outages.announced(
        max_unavailable,
        meanwhile="; the moves go on meanwhile",
        resume_hint=f"the moves go on; `kmigrate reassign apply PLAN --resume --wait` "
        f"or `kmigrate reassign status --cluster {cluster}` finishes the work",
    )

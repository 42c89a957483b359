"""`kmigrate migrate start | consumers | promote | retire | rollback | status | history`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click
from rich.live import Live

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, cluster_admins, pass_app
from kmigrate.cli.migration_view import history_rows, status_view
from kmigrate.cli.options import json_option
from kmigrate.cli.plan import show_check
from kmigrate.cli.verify import show_report
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.migration.consumers import move_consumers
from kmigrate.migration.observe import observe
from kmigrate.migration.plan import load_plan
from kmigrate.migration.promote import promote_topics
from kmigrate.migration.report import start_json, status_json
from kmigrate.migration.retire import retire_topics
from kmigrate.migration.rollback import rollback_topics
from kmigrate.migration.session import Migration, load_migration, locked
from kmigrate.migration.start import start_migration
from kmigrate.store import store_for
from kmigrate.store.migrations import events_of

migration_option = click.option(
    "--migration", "name", metavar="NAME", help="Which migration (default: the only one)."
)


@click.group("migrate")
def group() -> None:
    """Run a planned migration one guarded step at a time (see `kmigrate plan`)."""


@contextmanager
def _session(
    app: AppContext, name: str | None, command: str | None
) -> Iterator[tuple[Migration, ClusterAdmin, ClusterAdmin]]:
    store = store_for(app.settings)
    m = load_migration(store, app.settings, name)
    with cluster_admins(app, m.plan.source, m.plan.target) as (source, target):
        if command is None:
            yield m, source, target
            return
        with locked(store, m.name, command, render.progress):
            yield m, source, target


@group.command("start")
@click.argument("plan_file", type=click.Path(path_type=Path))
@json_option
@pass_app
def start(app: AppContext, plan_file: Path, as_json: bool) -> None:
    """Check the plan, copy its ACLs and start mirroring its topics (safe to run again)."""
    plan = load_plan(plan_file)
    store = store_for(app.settings)
    result = start_migration(app.settings, store, plan, plan_file.read_text(), render.progress)
    if as_json:
        render.print_json(start_json(plan, result))
        return
    show_check(result.check)
    if result.started:
        render.out.print(f"migration {plan.name}: mirroring {', '.join(result.started)}")
    elif result.mirror_restarted:
        render.out.print(f"migration {plan.name}: mirror resumed")
    else:
        render.out.print(f"migration {plan.name}: already started; see `kmigrate migrate status`")
    render.out.print(f"ACLs copied: {len(result.acls_copied)}")
    if result.acl_problem:
        render.out.print(f"[yellow]ACLs not copied[/yellow]: {result.acl_problem}")
    for acl in plan.acls_not_copied:
        render.out.print(
            f"[yellow]not copied[/yellow] {acl.resource_type}:{acl.resource_name} "
            f"{acl.operation} for {acl.principal}: {acl.reason}",
            soft_wrap=True,
        )


@group.command("consumers")
@click.argument("groups", nargs=-1, required=True)
@migration_option
@click.option(
    "--wait",
    "wait_s",
    type=float,
    default=300.0,
    show_default=True,
    help="Seconds to wait for the mirror to reach the groups' positions.",
)
@json_option
@pass_app
def consumers(
    app: AppContext, groups: tuple[str, ...], name: str | None, wait_s: float, as_json: bool
) -> None:
    """Move stopped consumer GROUPS to the target at their exactly translated offsets."""
    with _session(app, name, "consumers") as (m, source, target):
        outcomes = move_consumers(m, list(groups), source, target, render.progress, wait_s=wait_s)
    if as_json:
        render.print_json({"migration": m.name, "groups": outcomes})
        return
    where = "the gateway" if m.plan.via_gateway else f"'{m.plan.target}'"
    for group_id, outcome in outcomes.items():
        render.out.print(f"group {group_id}: {outcome}; start its consumers on {where}")


@group.command("promote")
@click.argument("topics", nargs=-1, required=True)
@migration_option
@click.option("--quiet-period", type=click.FloatRange(0), help="Seconds (default: the plan's).")
@click.option("--timeout", type=float, default=300.0, show_default=True)
@json_option
@pass_app
def promote(
    app: AppContext,
    topics: tuple[str, ...],
    name: str | None,
    quiet_period: float | None,
    timeout: float,
    as_json: bool,
) -> None:
    """Stop mirroring TOPICS (producers stopped, lag 0) and make the target copies writable."""
    with _session(app, name, "promote") as (m, source, target):
        result = promote_topics(
            m,
            list(topics),
            source,
            target,
            render.progress,
            quiet_period_s=quiet_period,
            timeout_s=timeout,
        )
    if as_json:
        render.print_json(
            {"migration": m.name, "promoted": result.topics, "seconds": round(result.seconds, 3)}
        )
        return
    done = ", ".join(result.topics) or "nothing (already promoted)"
    after = (
        "the gateway writes them to the target now"
        if m.plan.via_gateway
        else f"producers may write to '{m.plan.target}' now"
    )
    render.out.print(f"promoted {done} in {result.seconds:.1f}s; {after}")


@group.command("retire")
@click.argument("topics", nargs=-1, required=True)
@migration_option
@click.option("--apply", is_flag=True, help="Delete the source topics (default: check only).")
@click.option("--keep-source", is_flag=True, help="Mark DONE but keep the source topics.")
@json_option
@pass_app
def retire(
    app: AppContext,
    topics: tuple[str, ...],
    name: str | None,
    apply: bool,
    keep_source: bool,
    as_json: bool,
) -> None:
    """Verify TOPICS record by record, then (with --apply) delete them on the source: DONE."""
    with _session(app, name, "retire") as (m, source, target):
        result = retire_topics(
            m,
            list(topics),
            source,
            target,
            render.progress,
            apply=apply,
            keep_source=keep_source,
            on_verify=(lambda _r: None) if as_json else show_report,
        )
    if as_json:
        render.print_json(
            {
                "migration": m.name,
                "topics": result.topics,
                "applied": result.applied,
                "deleted_on_source": result.deleted,
                "verified": None if result.verify is None else result.verify.ok,
            }
        )
        return
    if not result.applied:
        render.out.print(
            f"verify passed; would delete {', '.join(result.topics) or 'nothing'} on source "
            f"'{m.plan.source}'. Run again with --apply (or --apply --keep-source)"
        )
        return
    render.out.print(
        f"retired {', '.join(result.topics)}: DONE"
        + (f"; deleted on '{m.plan.source}'" if result.deleted else "")
    )


@group.command("rollback")
@click.argument("topics", nargs=-1, required=True)
@migration_option
@pass_app
def rollback(app: AppContext, topics: tuple[str, ...], name: str | None) -> None:
    """Before promote: stop mirroring TOPICS, move groups that moved back to the source
    (exactly), delete the target copies and forget their maps."""
    with _session(app, name, "rollback") as (m, source, target):
        done = rollback_topics(m, list(topics), source, target, render.progress)
    render.out.print(
        f"rolled back {', '.join(done) or 'nothing'}: PLANNED again; "
        "`kmigrate migrate start PLAN` mirrors them from the beginning"
    )


@group.command("status")
@migration_option
@click.option("--watch", is_flag=True, help="Refresh every 2 seconds until Ctrl-C.")
@json_option
@pass_app
def status(app: AppContext, name: str | None, watch: bool, as_json: bool) -> None:
    """Per topic: state, lag, records/s, time to in-sync; per group: state and position;
    and the next allowed step."""
    with _session(app, name, None) as (m, source, target):
        if as_json:
            render.print_json(status_json(observe(m, source, target)))
            return
        if not watch:
            render.out.print(status_view(observe(m, source, target)))
            return
        if not render.out.is_terminal:  # a log or a pipe: one screen after another
            while True:
                render.out.print(status_view(observe(m, source, target)))
                render.out.print(time.strftime("-- %H:%M:%S"))
                render.out.file.flush()
                time.sleep(2)
        with Live(status_view(observe(m, source, target)), console=render.out) as live:
            while True:
                time.sleep(2)
                live.update(status_view(observe(m, source, target)))


@group.command("history")
@migration_option
@click.option("--last", type=click.IntRange(1), help="Only the last N entries.")
@json_option
@pass_app
def history(app: AppContext, name: str | None, last: int | None, as_json: bool) -> None:
    """The audit log: every step, when, by whom, and how it ended."""
    store = store_for(app.settings)
    m = load_migration(store, app.settings, name)
    events = events_of(store, m.name, last)
    if as_json:
        render.print_json({"migration": m.name, "events": events})
        return
    render.table(None, ("time", "actor", "step", "on", "outcome", "detail"), history_rows(events))

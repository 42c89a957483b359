"""`kmigrate migrate start | consumers | promote | retire | rollback | status | history`.

Steps name their topics with `--topics REGEX` and their groups with `--groups REGEX`,
matched against the migration's plan, or take a wave of the plan's with `--wave N` (the
old positional names still work for one release). Retire and rollback show what they
would delete and go ahead only with --yes (or a "y" on a terminal).

The steps are imported by the commands that run them: `kmigrate migrate --help` loads
this module and should not load the Kafka, ZooKeeper or store clients."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.live import Live

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, pass_app
from kmigrate.cli.migration_view import history_rows, status_view
from kmigrate.cli.options import (
    Duration,
    confirm,
    confirm_options,
    deprecated,
    duration_option,
    groups_option,
    json_option,
    timeout_option,
    topics_option,
)
from kmigrate.cli.plan import show_check
from kmigrate.cli.signals import stop_on_signals
from kmigrate.cli.verify import show_report

if TYPE_CHECKING:
    from kmigrate.migration.session import Migration
    from kmigrate.workspace import Admin

migration_option = click.option(
    "--migration", "name", metavar="MIGRATION", help="Which migration (default: the only one)."
)


class OldNames(click.Argument):
    """The old positional TOPIC.../GROUP... names: accepted for one release, not shown."""

    def get_usage_pieces(self, ctx: click.Context) -> list[str]:
        return []


def old_names(dest: str) -> Callable[[Callable[..., object]], Callable[..., object]]:
    return click.argument(dest, nargs=-1, cls=OldNames)


wave_option = click.option(
    "--wave",
    type=click.IntRange(1),
    metavar="N",
    help="The plan's wave N (see `kmigrate plan new`) instead of a regex.",
)

Selection = tuple[str | None, tuple[str, ...], int | None]


def selection(
    regex: str | None, names: tuple[str, ...], kind: str, wave: int | None = None
) -> Selection:
    """``--topics REGEX``, ``--wave N`` or (deprecated) positional names; checked before
    anything runs."""
    flag = f"--{kind}s"
    if names:
        deprecated(f"positional {kind.upper()}", f"{flag} REGEX")
        if regex is not None:
            raise click.UsageError(f"give {flag} REGEX or {kind} names, not both")
    if wave is not None and (regex is not None or names):
        raise click.UsageError(f"give {flag} REGEX or --wave N, not both")
    if wave is None and regex is None and not names:
        raise click.UsageError(f"Missing option '{flag}' (or --wave N).")
    return regex, names, wave


def chosen(m: Migration, kind: str, picked: Selection) -> list[str]:
    """The migration's topics (or groups) the selection names."""
    from kmigrate.migration.selection import chosen as chosen_in

    regex, names, wave = picked
    return chosen_in(m, kind, regex, names, wave)


@click.group("migrate")
def group() -> None:
    """Run a planned migration one guarded step at a time (see `kmigrate plan`)."""


@contextmanager
def _session(
    app: AppContext, name: str | None, command: str | None
) -> Iterator[tuple[Migration, Admin, Admin]]:
    from kmigrate.migration.session import load_migration, locked

    store = app.workspace.store
    m = load_migration(store, app.settings, name)
    with app.workspace.admins(m.plan.source, m.plan.target) as (source, target):
        if command is None:
            yield m, source, target
            return
        with locked(store, m.name, command, render.progress):
            yield m, source, target


@group.command("start")
@click.argument("plan_file", type=click.Path(path_type=Path))
@click.option(
    "--wave",
    type=click.IntRange(1),
    metavar="N",
    help="Start only the plan's wave N (check and mirror its topics; the rest wait).",
)
@json_option
@pass_app
def start(app: AppContext, plan_file: Path, wave: int | None, as_json: bool) -> None:
    """Check the plan, copy its ACLs, quotas and schemas, and start mirroring its topics
    (safe to run again)."""
    from kmigrate.migration.plan import load_plan
    from kmigrate.migration.report import start_json
    from kmigrate.migration.selection import in_wave
    from kmigrate.migration.start import start_migration

    plan = load_plan(plan_file)
    only = None if wave is None else in_wave(plan, "topic", wave, str(plan_file))
    store = app.workspace.store
    result = start_migration(
        app.settings, store, plan, plan_file.read_text(), render.progress, only=only
    )
    if as_json:
        render.print_json(start_json(plan, result) | {"wave": wave})
        return
    show_check(result.check)
    if result.started:
        what = f"wave {wave}: " if wave is not None else ""
        render.out.print(f"migration {plan.name}: mirroring {what}{', '.join(result.started)}")
    elif result.mirror_restarted:
        render.out.print(f"migration {plan.name}: mirror resumed")
    else:
        render.out.print(f"migration {plan.name}: already started; see `kmigrate migrate status`")
    render.out.print(
        f"ACLs copied: {len(result.acls_copied)}; quota entities set: {result.quotas_set}"
        + (f"; schema versions registered: {result.schemas_registered}" if plan.schemas else "")
    )
    for line in plan.quotas_not_copied:
        render.out.print(f"[yellow]quota not copied[/yellow]: {line}", soft_wrap=True)
    if result.acl_problem:
        render.out.print(f"[yellow]ACLs not copied[/yellow]: {result.acl_problem}")
    for acl in plan.acls_not_copied:
        render.out.print(
            f"[yellow]not copied[/yellow] {acl.resource_type}:{acl.resource_name} "
            f"{acl.operation} for {acl.principal}: {acl.reason}",
            soft_wrap=True,
        )


@group.command("consumers")
@groups_option(help="The stopped groups to move: a regex matched against the plan's groups.")
@old_names("old_groups")
@wave_option
@migration_option
@click.option(
    "--wait",
    "wait",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="",
    help="Wait (up to --timeout) for the mirror to reach the groups' positions; "
    "without it, a group the mirror has not reached yet is refused.",
)
@timeout_option("5m", "How long --wait waits for the mirror.")
@json_option
@pass_app
def consumers(
    app: AppContext,
    groups: str | None,
    old_groups: tuple[str, ...],
    wave: int | None,
    name: str | None,
    wait: str | None,
    timeout: float,
    as_json: bool,
) -> None:
    """Move stopped consumer groups to the target at their exactly translated offsets."""
    from kmigrate.migration.consumers import move_consumers

    picked = selection(groups, old_groups, "group", wave)
    if wait:  # the old `--wait SECONDS`
        deprecated("--wait SECONDS", "--wait --timeout DURATION")
        timeout = Duration().convert(wait, None, click.get_current_context())
    wait_s = timeout if wait is not None else None
    with _session(app, name, "consumers") as (m, source, target):
        outcomes = move_consumers(
            m, chosen(m, "group", picked), source, target, render.progress, wait_s=wait_s
        )
    if as_json:
        render.print_json({"migration": m.name, "groups": outcomes})
        return
    where = "the gateway" if m.plan.via_gateway else f"'{m.plan.target}'"
    for group_id, outcome in outcomes.items():
        render.out.print(f"group {group_id}: {outcome}; start its consumers on {where}")


@group.command("promote")
@topics_option(help="Topics to promote: a regex matched against the plan's topics.")
@old_names("old_topics")
@wave_option
@migration_option
@duration_option(
    "--quiet-period",
    "quiet_period",
    default=None,
    help="How long no producer may write before promote (default: the plan's).",
)
@timeout_option("5m", "How long to wait for the lag to reach 0.")
@json_option
@pass_app
def promote(
    app: AppContext,
    topics: str | None,
    old_topics: tuple[str, ...],
    wave: int | None,
    name: str | None,
    quiet_period: float | None,
    timeout: float,
    as_json: bool,
) -> None:
    """Stop mirroring the topics (producers stopped, lag 0) and make the target copies
    writable."""
    from kmigrate.migration.promote import promote_topics

    picked = selection(topics, old_topics, "topic", wave)
    with _session(app, name, "promote") as (m, source, target):
        result = promote_topics(
            m,
            chosen(m, "topic", picked),
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
@topics_option(help="Topics to retire: a regex matched against the plan's topics.")
@old_names("old_topics")
@wave_option
@migration_option
@click.option("--keep-source", is_flag=True, help="Mark DONE but keep the source topics.")
@confirm_options
@json_option
@pass_app
def retire(
    app: AppContext,
    topics: str | None,
    old_topics: tuple[str, ...],
    wave: int | None,
    name: str | None,
    keep_source: bool,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Verify the topics record by record, show what retiring them deletes on the source,
    then (with --yes, or a "y" on a terminal) delete them there: DONE."""
    from kmigrate.migration.retire import retire_topics

    picked = selection(topics, old_topics, "topic", wave)
    with _session(app, name, "retire") as (m, source, target):

        def go(todo: list[str]) -> bool:
            action = (
                f"mark {', '.join(todo)} DONE, keeping the source topics"
                if keep_source
                else f"delete {', '.join(todo)} on source '{m.plan.source}'"
            )
            if not as_json:
                render.out.print(f"verify passed; this would {action}", soft_wrap=True)
            return confirm(action, dry_run=dry_run, yes=yes)

        result = retire_topics(
            m,
            chosen(m, "topic", picked),
            source,
            target,
            render.progress,
            apply=True,
            keep_source=keep_source,
            on_verify=(lambda _r: None) if as_json else show_report,
            go=go,
        )
    if as_json:
        render.print_json(
            {
                "migration": m.name,
                "topics": result.topics,
                "applied": result.applied,
                "deleted_on_source": result.deleted,
                "would_delete_on_source": [] if keep_source or result.applied else result.topics,
                "verified": None if result.verify is None else result.verify.ok,
            }
        )
        return
    if result.applied:
        render.out.print(
            f"retired {', '.join(result.topics)}: DONE"
            + (f"; deleted on '{m.plan.source}'" if result.deleted else "")
        )
    elif not result.topics:
        render.out.print("nothing to retire: every topic named is DONE")


@group.command("rollback")
@topics_option(help="Topics to roll back: a regex matched against the plan's topics.")
@old_names("old_topics")
@wave_option
@migration_option
@confirm_options
@json_option
@pass_app
def rollback(
    app: AppContext,
    topics: str | None,
    old_topics: tuple[str, ...],
    wave: int | None,
    name: str | None,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Before promote: stop mirroring the topics, move groups that moved back to the
    source (exactly), delete the target copies and forget their maps. Shows what it
    would do first; goes ahead with --yes (or a "y" on a terminal)."""
    from kmigrate.migration.rollback import rollback_topics

    picked = selection(topics, old_topics, "topic", wave)
    shown: dict[str, list[str]] = {}
    with _session(app, name, "rollback") as (m, source, target):

        def go(todo: list[str], groups: list[str]) -> bool:
            shown.update(topics=todo, groups=groups)
            action = f"delete {', '.join(todo)} on target '{m.plan.target}'" + (
                f" and move group(s) {', '.join(groups)} back to source '{m.plan.source}'"
                if groups
                else ""
            )
            if not as_json:
                render.out.print(f"this would {action}", soft_wrap=True)
            return confirm(action, dry_run=dry_run, yes=yes)

        done = rollback_topics(
            m, chosen(m, "topic", picked), source, target, render.progress, go=go
        )
    if as_json:
        render.print_json(
            {
                "migration": m.name,
                "rolled_back": done,
                "would_roll_back": [] if done else shown.get("topics", []),
                "groups_moved_back": shown.get("groups", []) if done else [],
            }
        )
        return
    if done or not shown:
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
    and the next allowed step. No migration yet: says so (exit 0)."""
    from kmigrate.migration.observe import observe
    from kmigrate.migration.report import status_json
    from kmigrate.migration.session import find_migration

    if name is None and find_migration(app.workspace.store, None) is None:
        _nothing_yet(as_json, {"migration": None, "topics": [], "groups": []})
        return
    with _session(app, name, None) as (m, source, target):
        if as_json:
            render.print_json(status_json(observe(m, source, target)))
            return
        if not watch:
            render.out.print(status_view(observe(m, source, target)))
            return
        stop = threading.Event()
        with stop_on_signals(stop) as received:
            if not render.out.is_terminal:  # a log or a pipe: one screen after another
                while not stop.is_set():
                    render.out.print(status_view(observe(m, source, target)))
                    render.out.print(time.strftime("-- %H:%M:%S"))
                    render.out.file.flush()
                    stop.wait(2)
            else:
                with Live(status_view(observe(m, source, target)), console=render.out) as live:
                    while not stop.wait(2):
                        live.update(status_view(observe(m, source, target)))
        sys.exit(128 + received[0])  # as a shell reports it: 130 for Ctrl-C, 143 for SIGTERM


@group.command("history")
@migration_option
@click.option("--last", type=click.IntRange(1), help="Only the last N entries.")
@json_option
@pass_app
def history(app: AppContext, name: str | None, last: int | None, as_json: bool) -> None:
    """The audit log: every step, when, by whom, and how it ended."""
    from kmigrate.migration.session import events, find_migration, load_migration

    store = app.workspace.store
    if name is None and find_migration(store, None) is None:
        _nothing_yet(as_json, {"migration": None, "events": []})
        return
    m = load_migration(store, app.settings, name)
    found = events(store, m.name, last)
    if as_json:
        render.print_json({"migration": m.name, "events": found})
        return
    render.table(None, ("time", "actor", "step", "on", "outcome", "detail"), history_rows(found))


def _nothing_yet(as_json: bool, empty: dict[str, object]) -> None:
    if as_json:
        render.print_json(empty)
        return
    render.out.print("no migration yet; start one with `kmigrate migrate start plan.yaml`")

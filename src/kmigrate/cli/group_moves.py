"""`kmigrate groups translate | migrate | sync`: consumer groups across a link.

The use cases are imported by the commands that run them: `kmigrate groups --help`
loads this module and should not load the Kafka clients or the store.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

import click

from kmigrate.cli import outages, render
from kmigrate.cli.context import AppContext, pass_app
from kmigrate.cli.options import (
    confirm,
    confirm_options,
    duration_option,
    groups_option,
    json_option,
    max_unavailable_option,
    timeout_option,
)
from kmigrate.cli.render import wait_bar
from kmigrate.cli.signals import stop_on_signals
from kmigrate.errors import ConfigError
from kmigrate.groups.translation import PartitionTranslation
from kmigrate.jsonable import to_jsonable
from kmigrate.model.links import Link, compile_topics

if TYPE_CHECKING:
    from kmigrate.groups.migrate import MigrateResult
    from kmigrate.groups.plan import GroupPlan
    from kmigrate.groups.sync import SyncRound
    from kmigrate.groups.view import GroupView

link_option = click.option("--link", "link_name", metavar="LINK", help="Link whose map to use.")
group_option = click.option("--group", "group_id", required=True, metavar="GROUP", help="Group id.")
required_link_option = click.option(
    "--link", "link_name", required=True, metavar="LINK", help="Link whose map to use."
)
MAX_GROUP_ID_BYTES = 32767  # a Kafka protocol STRING


def check_group_id(group_id: str) -> str:
    """Kafka takes any non-empty group id that fits its string encoding."""
    if not group_id or len(group_id.encode()) > MAX_GROUP_ID_BYTES:
        shown = group_id if len(group_id) <= 60 else group_id[:57] + "..."
        raise ConfigError(
            f"group id '{shown}' is not a valid Kafka group id: give 1 to "
            f"{MAX_GROUP_ID_BYTES} bytes"
        )
    return group_id


@click.command("translate")
@link_option
@group_option
@click.option(
    "--by-timestamp",
    is_flag=True,
    help="No offset map (data copied by another tool): translate through record timestamps.",
)
@click.option("--source", metavar="CLUSTER", help="With --by-timestamp and no --link.")
@click.option("--target", metavar="CLUSTER", help="With --by-timestamp and no --link.")
@json_option
@pass_app
def translate(
    app: AppContext,
    link_name: str | None,
    group_id: str,
    by_timestamp: bool,
    source: str | None,
    target: str | None,
    as_json: bool,
) -> None:
    """Per partition: the group's source commit, its target offset and whether it is exact.

    Through the link's offset map the translation is exact. If the source cannot be
    reached (failover) it uses the last commit kmigrate saw and says how many records
    may repeat. With --by-timestamp it is approximate, with a bound per partition.
    """
    from kmigrate.groups.plan import plan_group

    check_group_id(group_id)
    if by_timestamp:
        _translate_by_timestamp(app, link_name, group_id, source, target, as_json)
        return
    if not link_name:
        raise ConfigError("pass --link LINK (or --by-timestamp --source A --target B)")
    store = app.workspace.store
    link = app.workspace.link(link_name)
    with app.workspace.admins(link.source, link.target) as (s, t):
        plan = plan_group(store, link, group_id, s, t, fall_back=True)
    _show_plan(plan, as_json)


def _translate_by_timestamp(
    app: AppContext,
    link_name: str | None,
    group_id: str,
    source: str | None,
    target: str | None,
    as_json: bool,
) -> None:
    from kmigrate.groups.by_timestamp import translate_by_timestamp
    from kmigrate.groups.report import view_json
    from kmigrate.groups.view import view_group

    if link_name:
        link = app.workspace.link(link_name)
        source, target = source or link.source, target or link.target
    if not source or not target:
        raise ConfigError("--by-timestamp needs --link LINK or both --source and --target")
    app.cluster(source), app.cluster(target)  # both configured, before either is asked
    with app.workspace.admins(source, target) as (s, t):
        source_view, target_view = view_group(s, group_id), view_group(t, group_id)
        commits = [(tp, p, o) for (tp, p), o in source_view.committed.items()]
        if not commits:
            raise ConfigError(f"consumer group '{group_id}' has no committed offsets on '{source}'")
        rows = translate_by_timestamp(s, t, commits)
    payload = {
        "group": group_id,
        "method": "timestamp",
        "source": view_json(source_view),
        "target": view_json(target_view),
        "partitions": rows,
    }
    if as_json:
        render.print_json(payload)
        return
    _print_header(group_id, source_view, target_view, None)
    _print_rows(rows)
    render.out.print("approximate: translated through record timestamps (no offset map)")


def _show_plan(plan: GroupPlan, as_json: bool) -> None:
    from kmigrate.groups.report import plan_json

    if as_json:
        render.print_json(plan_json(plan))
        return
    _print_header(plan.group, plan.source, plan.target, plan.source_error, plan.link)
    _print_rows(plan.partitions, plan.target.committed)


def _print_header(
    group: str,
    source: GroupView | None,
    target: GroupView,
    source_error: str | None,
    link: Link | None = None,
) -> None:
    via = f" via link {link.name}" if link else ""
    if source is None:
        src = f"source unreachable ({source_error})"
    else:
        src = f"source {source.cluster}: {source.state}, {source.members} member(s)"
    render.out.print(
        f"[bold]group {group}[/bold]{via}: {src}; target {target.cluster}: "
        f"{target.state}, {target.members} member(s)",
        soft_wrap=True,
    )


def _print_rows(
    rows: list[PartitionTranslation], on_target: dict[tuple[str, int], int] | None = None
) -> None:
    columns = ["topic", "partition", "source committed", "target offset", "exact", "note"]
    if on_target is not None:
        columns.insert(4, "target now")
    table_rows = []
    for r in rows:
        row: list[Any] = [
            r.topic,
            r.partition,
            r.source_offset,
            "-" if r.target_offset is None else r.target_offset,
            "yes" if r.exact else "no",
            r.detail or "",
        ]
        if on_target is not None:
            row.insert(4, on_target.get((r.topic, r.partition), "-"))
        table_rows.append(row)
    render.table(None, columns, table_rows)


@click.command("migrate")
@required_link_option
@click.option("--group", "group_id", metavar="GROUP", help="Group id.")
@groups_option(
    "Instead of --group: every source group whose id this regex matches (whole id), "
    "checked together (one that cannot move stops all) and committed at once."
)
@click.option("--wait", is_flag=True, help="Wait for the mirror to reach the group's position.")
@timeout_option("10m", "How long --wait waits.")
@click.option(
    "--failover",
    is_flag=True,
    help="The source is gone: use the last commits kmigrate saw (records may repeat).",
)
@confirm_options
@json_option
@pass_app
def migrate(app: AppContext, /, **opts: Any) -> None:
    """Move a stopped group: commit its exact translated offsets to the same group on the target.

    It shows the plan first; --yes commits it (a terminal is asked; --dry-run changes
    nothing). It refuses, writing nothing, while the group has members on either side
    or a position is not mirrored. With --groups REGEX it moves many groups at once.
    """
    from kmigrate.cli.groups_many import migrate_many
    from kmigrate.groups.migrate import migrate_group
    from kmigrate.groups.report import migrate_json

    if opts["group_id"] is not None and opts["groups"] is not None:
        raise click.UsageError("pass --group GROUP or --groups REGEX, not both")
    if opts["groups"] is not None:
        migrate_many(app, opts)
        return
    if opts["group_id"] is None:
        raise click.UsageError("Missing option '--group' (or --groups REGEX).")
    group_id = check_group_id(opts["group_id"])
    as_json = opts["as_json"]
    store = app.workspace.store
    link = app.workspace.link(opts["link_name"])
    with app.workspace.admins(link.source, link.target) as (s, t):

        def move(apply: bool, wait_s: float | None) -> MigrateResult:
            with wait_bar(as_json or wait_s is None) as bar:
                return migrate_group(
                    store, link, group_id, s, t,
                    apply=apply, wait_s=wait_s, failover=opts["failover"], on_wait=bar,
                )  # fmt: skip

        result = move(False, opts["timeout"] if opts["wait"] else None)
        if result.changes:
            if not as_json:
                _show_plan(result.plan, False)
            action = (
                f"commit {len(result.changes)} partition(s) of group {group_id} on {t.cluster.name}"
            )
            if confirm(action, dry_run=opts["dry_run"], yes=opts["yes"]):
                result = move(True, None)
            elif as_json:
                render.print_json(migrate_json(result))
                return
            else:
                return
    _show_migrate(result, as_json, shown=bool(result.changes))


def _show_migrate(result: MigrateResult, as_json: bool, *, shown: bool = False) -> None:
    from kmigrate.groups.report import migrate_json

    plan = result.plan
    if as_json:
        render.print_json(migrate_json(result))
        return
    if not shown:
        _show_plan(plan, False)
    n, g, target = len(result.changes), plan.group, plan.link.target
    if result.outcome == "already-done":
        render.out.print(
            f"group {g} is already at its translated offsets on {target}; nothing changed"
        )
    elif result.outcome == "applied":
        render.out.print(
            f"committed {n} partition(s) of group {g} on {target}; start its consumers there"
        )


@click.command("sync")
@required_link_option
@groups_option("Groups to follow: a regex that must match the whole id.", default=".*")
@duration_option("--interval", "interval", default="5s", minimum=0.2, help="How often to sync.")
@click.option("--once", is_flag=True, help="One round, then exit.")
@max_unavailable_option("15m")
@json_option
@pass_app
def sync(
    app: AppContext,
    link_name: str,
    groups: str,
    interval: float,
    once: bool,
    max_unavailable: float,
    as_json: bool,
) -> None:
    """Keep matching groups on the target at the exact translation of their source commits.

    Runs until Ctrl-C / SIGTERM. Groups with members on the target, or that consumed
    there since the last sync, are left alone (and reported). A cluster that stops
    answering (a coordinator restarting) is waited out for up to --max-unavailable.
    """
    from kmigrate.groups.sync import follow

    groups_regex = groups
    pattern = compile_topics(groups_regex)
    store = app.workspace.store
    link = app.workspace.link(link_name)
    stop = threading.Event()
    policy = outages.announced(
        max_unavailable,
        resumes="; syncing resumes",
        pause=lambda seconds: not stop.wait(seconds),
        roles={link.source: "source", link.target: "target"},
        resume_hint="run `kmigrate groups sync` again once it is back",
    )
    with stop_on_signals(stop), app.workspace.admins(link.source, link.target) as (s, t):
        if not as_json:
            render.progress(
                f"syncing groups '{groups_regex}' of link {link.name} every {interval:g}s"
            )
        last: dict[str, str | None] = {}
        follow(
            store,
            link,
            pattern,
            s,
            t,
            policy,
            lambda round_: _report_round(round_, last, as_json),
            interval,
            once=once,
        )


def _report_round(round_: SyncRound, last: dict[str, str | None], as_json: bool) -> None:
    if as_json:
        print(json.dumps({"groups": to_jsonable(round_.groups)}), flush=True)
        return
    for g in round_.groups:
        if g.skipped is not None:
            if last.get(g.group) != g.skipped:
                render.progress(f"group {g.group}: left alone: {g.skipped}")
        elif g.updated:
            render.progress(
                f"group {g.group}: {g.updated} partition(s) committed on the target"
                + (f", {g.pending} waiting for the mirror" if g.pending else "")
            )
        last[g.group] = g.skipped

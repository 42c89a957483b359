"""`kmigrate groups migrate --groups REGEX`: many stopped groups moved at once."""

from __future__ import annotations

import re
from typing import Any

from kmigrate.cli import render
from kmigrate.cli.context import AppContext
from kmigrate.cli.options import confirm
from kmigrate.cli.render import wait_bar
from kmigrate.errors import GroupNotFoundError
from kmigrate.groups.migrate_many import ManyMoved, matching_groups, migrate_groups
from kmigrate.groups.report import migrate_json


def migrate_many(app: AppContext, opts: dict[str, Any]) -> None:
    """Plan every matching group, show the plan, and with --yes commit all of it."""
    as_json, pattern = opts["as_json"], re.compile(opts["groups"])
    store = app.workspace.store
    link = app.workspace.link(opts["link_name"])
    with app.workspace.admins(link.source, link.target) as (s, t):
        names = matching_groups(store, link, pattern, s, failover=opts["failover"])

        def move(apply: bool, wait_s: float | None) -> ManyMoved:
            with wait_bar(as_json or wait_s is None) as bar:
                return migrate_groups(
                    store, link, names, s, t,
                    apply=apply, wait_s=wait_s, failover=opts["failover"], on_wait=bar,
                )  # fmt: skip

        moved = move(False, opts["timeout"] if opts["wait"] else None)
        if not moved.results:
            raise GroupNotFoundError(
                f"no consumer group matching --groups '{pattern.pattern}' has committed "
                f"offsets for the topics of link '{link.name}' on source '{link.source}'"
            )
        if moved.changes:
            if not as_json:
                _table(moved)
            groups = sum(1 for r in moved.results if r.changes)
            action = f"commit {moved.changes} partition(s) of {groups} group(s) on {t.cluster.name}"
            if not confirm(action, dry_run=opts["dry_run"], yes=opts["yes"]):
                if as_json:
                    render.print_json(_json(link.name, moved))
                return
            moved = move(True, None)
    _report(link.target, moved, as_json, shown=bool(moved.changes))


def _table(moved: ManyMoved) -> None:
    render.table(
        None,
        ["group", "source", "target", "partitions", "to commit", "outcome"],
        [
            (
                r.plan.group,
                _side(r.plan.source.state, r.plan.source.members) if r.plan.source else "-",
                _side(r.plan.target.state, r.plan.target.members),
                len(r.plan.partitions),
                len(r.changes),
                r.outcome,
            )
            for r in moved.results
        ],
    )


def _side(state: str, members: int) -> str:
    return f"{state}, {members} member(s)" if members else state


def _json(link: str, moved: ManyMoved) -> dict[str, Any]:
    return {
        "link": link,
        "groups": [migrate_json(r) for r in moved.results],
        "left_out": moved.left_out,
    }


def _report(target: str, moved: ManyMoved, as_json: bool, *, shown: bool) -> None:
    if as_json:
        render.print_json(_json(moved.results[0].plan.link.name, moved))
        return
    if not shown:
        _table(moved)
    if moved.left_out:
        render.out.print(
            f"{len(moved.left_out)} matching group(s) have no offsets on the link's topics: "
            "left alone"
        )
    applied = [r for r in moved.results if r.applied]
    if applied:
        partitions = sum(len(r.changes) for r in applied)
        render.out.print(
            f"committed {partitions} partition(s) of {len(applied)} group(s) on {target}; "
            "start their consumers there"
        )
    elif not moved.changes:
        render.out.print(
            f"all {len(moved.results)} group(s) are already at their translated offsets on "
            f"{target}; nothing changed"
        )

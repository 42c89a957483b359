"""A group's translation and move as JSON: what `groups translate|migrate --json` print
and `kmigrate serve` answers."""

from __future__ import annotations

from typing import Any

from kmigrate.groups.migrate import MigrateResult
from kmigrate.groups.plan import GroupPlan
from kmigrate.groups.view import GroupView
from kmigrate.jsonable import to_jsonable


def view_json(view: GroupView | None) -> dict[str, Any] | None:
    if view is None:
        return None
    return {"cluster": view.cluster, "state": view.state, "members": view.members}


def plan_json(plan: GroupPlan) -> dict[str, Any]:
    return {
        "link": plan.link.name,
        "group": plan.group,
        "method": "offset-map",
        "source": view_json(plan.source),
        "source_error": plan.source_error,
        "target": view_json(plan.target),
        "partitions": to_jsonable(plan.partitions),
    }


def migrate_json(result: MigrateResult) -> dict[str, Any]:
    return plan_json(result.plan) | {
        "outcome": result.outcome,
        "changes": [
            {"topic": t, "partition": p, "offset": o}
            for (t, p), o in sorted(result.changes.items())
        ],
    }

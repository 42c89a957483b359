"""A migration's status as JSON: what `migrate status --json` prints and `kmigrate
serve` answers."""

from __future__ import annotations

from typing import Any

from kmigrate.migration.observe import Snapshot
from kmigrate.migration.plan import Plan
from kmigrate.migration.start import StartResult
from kmigrate.migration.status import next_steps


def status_json(snap: Snapshot) -> dict[str, Any]:
    m = snap.migration
    mirror = snap.mirror
    return {
        "migration": m.name,
        "source": m.plan.source,
        "target": m.plan.target,
        "switch_order": m.plan.switch_order.value,
        "mirror": {
            "state": mirror.state if mirror else "never-started",
            "reason": mirror.reason if mirror else None,
            "pid": mirror.run.pid if mirror and mirror.run else None,
        },
        "topics": [
            {
                "topic": t.name,
                "state": t.phase.value,
                "pending": t.pending,
                "partitions": t.partitions,
                "lag": t.lag,
                "records_per_s": t.records_per_s,
                "to_in_sync_s": t.to_in_sync_s,
            }
            for t in snap.topics
        ],
        "groups": [
            {
                "group": g.name,
                "state": g.phase.value,
                "pending": g.pending,
                "topics": list(g.topics),
                "members": {"source": g.source.members, "target": g.target.members},
                "source_lag": g.source_lag,
                "target_committed": {f"{t}[{p}]": o for (t, p), o in g.target.committed.items()},
            }
            for g in snap.groups
        ],
        "next": next_steps(snap),
    }


def start_json(plan: Plan, result: StartResult) -> dict[str, Any]:
    """What `migrate start --json` prints."""
    return {
        "migration": plan.name,
        "started": result.started,
        "mirror_restarted": result.mirror_restarted,
        "acls_copied": result.acls_copied,
        "acl_problem": result.acl_problem,
        "acls_not_copied": [a.model_dump() for a in plan.acls_not_copied],
        "quotas_set": result.quotas_set,
        "quotas_not_copied": plan.quotas_not_copied,
        "schemas_registered": result.schemas_registered,
    }

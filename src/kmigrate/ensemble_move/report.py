"""An ensemble move's status as JSON: what `zk status --json` prints and `kmigrate serve`
answers."""

from __future__ import annotations

from typing import Any

from kmigrate.ensemble_move.plan import parse_plan
from kmigrate.model.operations import MoveRecord


def status_json(move: MoveRecord) -> dict[str, Any]:
    plan = parse_plan(move.plan_yaml, "the stored plan")
    return {
        "kafka": move.kafka,
        "phase": move.phase,
        "from": plan.source.name,
        "to": plan.target.name,
        "updated_ms": move.updated_ms,
    }

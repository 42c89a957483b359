"""A link's status as JSON: what `mirror status --json` prints and `kmigrate serve`
answers."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from kmigrate.jsonable import to_jsonable
from kmigrate.mirror.status import LinkStatus
from kmigrate.mirror.summary import summarise


def link_json(s: LinkStatus) -> dict[str, Any]:
    """Every field per link and partition, and ``summary``: the totals and one entry per
    topic, those that need attention first (see `kmigrate.mirror.summary`)."""
    return {
        "link": s.link.name,
        "source": s.link.source,
        "target": s.link.target,
        "topics_regex": s.link.topics,
        "state": s.state,
        "reason": s.reason,
        "waiting": _waiting_json(s),
        "clusters_unavailable": s.unavailable,
        "pid": s.run.pid if s.run else None,
        "records_per_s": s.run.records_per_s if s.run and s.state == "running" else 0.0,
        "batch_s": s.run.batch_s if s.run else None,
        "lag": s.lag,
        "topics": [
            {"topic": t.topic, "partitions": t.partitions, "state": t.state.value} for t in s.topics
        ],
        "partitions": [to_jsonable(p) for p in s.partitions],
        "gaps": [to_jsonable(g) for g in s.gaps],
        "summary": to_jsonable(summarise(s)),
    }


def _waiting_json(s: LinkStatus) -> dict[str, Any] | None:
    waiting = s.run.waiting if s.run is not None and s.state == "waiting" else None
    if waiting is None:
        return None
    return {
        "cluster": waiting.cluster,
        "role": waiting.role,
        "condition": waiting.condition,
        "since_ms": waiting.since_ms,
        "since": datetime.fromtimestamp(waiting.since_ms / 1000, tz=UTC).isoformat(),
        "for_s": round(max(time.time() - waiting.since_ms / 1000, 0), 1),
    }

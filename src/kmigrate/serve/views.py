"""What the API answers, built by the same functions as the CLI's `--json` output."""

from __future__ import annotations

import logging
import re
from contextlib import ExitStack
from typing import Any

from kmigrate.config import Settings
from kmigrate.ensemble_move.move import ensemble_move
from kmigrate.ensemble_move.report import status_json as zk_move_json
from kmigrate.errors import KMigrateError, NotFoundError
from kmigrate.jsonable import to_jsonable
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kraft.conversion import kraft_conversion
from kmigrate.kraft.plan import parse_plan as parse_kraft_plan
from kmigrate.migration.observe import observe
from kmigrate.migration.report import status_json
from kmigrate.migration.session import load_migration
from kmigrate.mirror.report import link_json
from kmigrate.mirror.status import LinkStatus, link_status
from kmigrate.model.links import Link, compile_topics
from kmigrate.reassign.report import status_json as reassignment_json
from kmigrate.store import Store
from kmigrate.store import reassignments as stored_moves
from kmigrate.store.links import list_links, require_link
from kmigrate.store.migrations import events_of, items_of, migration_names

log = logging.getLogger(__name__)


def clusters(settings: Settings) -> dict[str, Any]:
    """Names, bootstrap servers and properties with every secret redacted."""
    return {
        "clusters": [
            {
                "name": name,
                "bootstrap_servers": c.bootstrap_servers,
                "properties": c.redacted_properties(),
            }
            for name, c in sorted(settings.clusters.items())
        ]
    }


def live_status(
    settings: Settings, store: Store, link: Link, topics: re.Pattern[str] | None = None
) -> LinkStatus:
    """A link's status with both clusters' end offsets (a cluster that does not answer
    is named in ``unavailable``; one missing from clusters.yaml leaves the store's view).
    ``topics``: only those of the link's topics."""
    with ExitStack() as stack:
        admins = []
        for name in (link.source, link.target):
            try:
                admins.append(stack.enter_context(ClusterAdmin(settings.cluster(name))))
            except KMigrateError as exc:
                log.info("link %s: %s", link.name, exc.message)
                return link_status(store, link, None, None, topics)
        return link_status(store, link, admins[0], admins[1], topics)


def links(
    settings: Settings, store: Store, offline: bool, topics: str | None = None
) -> dict[str, Any]:
    """What `mirror status --json [--offline] [--topics REGEX]` prints."""
    pattern = _pattern(topics)
    return {
        "links": [_link(settings, store, found, offline, pattern) for found in list_links(store)]
    }


def link(
    settings: Settings, store: Store, name: str, offline: bool, topics: str | None = None
) -> dict[str, Any]:
    pattern = _pattern(topics)
    return _link(settings, store, require_link(store, name), offline, pattern)


def _pattern(topics: str | None) -> re.Pattern[str] | None:
    return None if topics is None else compile_topics(topics)


def _link(
    settings: Settings, store: Store, found: Link, offline: bool, topics: re.Pattern[str] | None
) -> dict[str, Any]:
    if offline:
        return link_json(link_status(store, found, None, None, topics))
    return link_json(live_status(settings, store, found, topics))


def migrations(store: Store) -> dict[str, Any]:
    return {
        "migrations": [
            {
                "migration": name,
                "topics": {i.name: i.state for i in items_of(store, name, "topic")},
                "groups": {i.name: i.state for i in items_of(store, name, "group")},
            }
            for name in migration_names(store)
        ]
    }


def migration(settings: Settings, store: Store, name: str) -> dict[str, Any]:
    m = load_migration(store, settings, name)
    with (
        ClusterAdmin(settings.cluster(m.plan.source)) as source,
        ClusterAdmin(settings.cluster(m.plan.target)) as target,
    ):
        return status_json(observe(m, source, target))


def history(settings: Settings, store: Store, name: str, last: int | None) -> dict[str, Any]:
    m = load_migration(store, settings, name)
    return {"migration": m.name, "events": to_jsonable(events_of(store, m.name, last))}


def reassignment(settings: Settings, store: Store, cluster: str) -> dict[str, Any]:
    """The reassignment kmigrate applied on ``cluster``, as the store has it (`reassign
    status` also drives it on; the API only reads)."""
    settings.cluster(cluster)  # an unknown cluster is named as such
    found = stored_moves.current(store, cluster)
    if found is None:
        raise NotFoundError(f"cluster '{cluster}' has no reassignment applied by kmigrate")
    return {**reassignment_json(store, found), "started_ms": found.started_ms}


def zk_move(settings: Settings, store: Store, cluster: str) -> dict[str, Any]:
    """A ZooKeeper ensemble move of ``cluster``: what `zk status` shows, and its history."""
    settings.cluster(cluster)
    found = ensemble_move(store, cluster).get()
    if found is None:
        raise NotFoundError(f"cluster '{cluster}' has no ZooKeeper move; plan one with `zk plan`")
    return {**zk_move_json(found), "history": to_jsonable(ensemble_move(store, cluster).history())}


def kraft_move(settings: Settings, store: Store, cluster: str) -> dict[str, Any]:
    """A migration of ``cluster`` to KRaft, as the store has it: its phase, controllers and
    history (`kraft status` also asks each broker its mode; the API only reads)."""
    settings.cluster(cluster)
    conversion = kraft_conversion(store, cluster)
    found = conversion.get()
    if found is None:
        raise NotFoundError(
            f"cluster '{cluster}' has no migration to KRaft; plan one with `kraft plan`"
        )
    plan = parse_kraft_plan(found.plan_yaml, "the stored plan")
    return {
        "kafka": cluster,
        "phase": found.phase,
        "controllers": plan.voters,
        "brokers": sorted(plan.brokers),
        "history": [
            e
            for e in to_jsonable(kraft_conversion(store, cluster).history())
            if e["step"] != "snapshot"
        ],
    }

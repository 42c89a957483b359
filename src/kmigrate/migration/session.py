"""The frame every migration command runs in: the lock, the audit log, interrupted steps.

A command takes the migration's lock (the runbook's: a second command refuses; a lock
left by a killed process is taken over and logged), checks its guards (a refusal is logged and
changes nothing), marks its items as `pending` while it acts and clears them when
done. A command killed mid-step leaves `pending` behind: the same command resumes it,
any other refuses and says which command finishes it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NoReturn

from kmigrate.config import Settings
from kmigrate.errors import ConfigError, ConflictError, KMigrateError, NotFoundError
from kmigrate.migration.plan import Plan, parse_plan
from kmigrate.model.migrations import Event, Item
from kmigrate.runbook.lock import held
from kmigrate.store import Store
from kmigrate.store.locks import Holder
from kmigrate.store.migrations import (
    events_of,
    items_of,
    migration_names,
    migration_plan_yaml,
    record_event,
    require_migration,
    set_pending,
)

Report = Callable[[str], None]
_PLAIN = re.compile(r"[A-Za-z0-9._-]+")


@dataclass
class Migration:
    """A started migration: its stored plan and where it lives."""

    name: str
    plan: Plan
    store: Store
    settings: Settings

    def topics(self) -> dict[str, Item]:
        return {i.name: i for i in items_of(self.store, self.name, "topic")}

    def groups(self) -> dict[str, Item]:
        return {i.name: i for i in items_of(self.store, self.name, "group")}


def find_migration(store: Store, name: str | None) -> str | None:
    """The named migration (exit 4 when it does not exist), the only one when no name is
    given, None when there is none yet; several without a name is a usage error."""
    if name is not None:
        return require_migration(store, name)
    names = migration_names(store)
    if len(names) > 1:
        raise ConfigError(f"pass --migration NAME (migrations: {', '.join(names)})")
    return names[0] if names else None


def load_migration(store: Store, settings: Settings, name: str | None) -> Migration:
    found = find_migration(store, name)
    if found is None:
        raise NotFoundError("no migration yet; start one with `kmigrate migrate start plan.yaml`")
    name = found
    text = migration_plan_yaml(store, name)
    assert text is not None
    return Migration(
        name, parse_plan(text, f"the stored plan of migration '{name}'"), store, settings
    )


def events(store: Store, migration: str, last: int | None = None) -> list[Event]:
    """The migration's audit log, oldest first (only the ``last`` entries if given)."""
    return events_of(store, migration, last)


@contextmanager
def locked(store: Store, migration: str, command: str, report: Report) -> Iterator[None]:
    """Hold the migration's lock for one command."""

    def taken_over(gone: Holder) -> None:
        report(f"taking over the lock of `{gone.command}` (pid {gone.pid}, gone)")
        record_event(
            store, migration, "lock", [], "recovered", f"pid {gone.pid} ({gone.command}) died"
        )

    with held(
        store,
        f"migration:{migration}",
        f"migrate {command}",
        what=f"migration '{migration}'",
        on_takeover=taken_over,
    ):
        yield


class Step:
    """One guarded step on some topics or groups of a migration."""

    def __init__(
        self, m: Migration, action: str, kind: str, names: list[str], report: Report
    ) -> None:
        self.m = m
        self.action = action
        self.kind = kind
        self.names = names
        self.report = report
        self._check_planned()
        self.resuming = self._interrupted()

    def _check_planned(self) -> None:
        plan = self.m.plan
        known = plan.topic_names() if self.kind == "topic" else [g.name for g in plan.groups]
        for name in self.names:
            if name not in known:
                self.refuse(
                    f"{self.kind} {name} is not in migration '{self.m.name}' "
                    f"(its {self.kind}s: {', '.join(known) or 'none'})",
                    NotFoundError,
                )

    def _interrupted(self) -> list[str]:
        items = self.m.topics() if self.kind == "topic" else self.m.groups()
        resuming = []
        for name in self.names:
            item = items.get(name)
            if item is None or item.pending is None:
                continue
            if item.pending != self.action:
                self.refuse(
                    f"{self.kind} {name} has an interrupted `{item.pending}` "
                    f"(begun {_ago(item.pending_since_ms)}); finish it first: "
                    f"kmigrate migrate {item.pending} {selector(self.kind, [name])}"
                )
            resuming.append(name)
        if resuming:
            self.report(f"resuming the interrupted {self.action} of {', '.join(resuming)}")
        return resuming

    def refuse(self, message: str, error: type[KMigrateError] = ConflictError) -> NoReturn:
        """Log the refusal and raise it; nothing has changed."""
        record_event(self.m.store, self.m.name, self.action, self.names, "refused", message)
        raise error(message)

    @contextmanager
    def acting(self) -> Iterator[None]:
        """Around the part that changes things: pending while it runs, logged either way."""
        store, name = self.m.store, self.m.name
        set_pending(store, name, self.kind, self.names, self.action)
        record_event(store, name, self.action, self.names, "started")
        try:
            yield
        except BaseException as exc:
            text = exc.message if isinstance(exc, KMigrateError) else type(exc).__name__
            record_event(store, name, self.action, self.names, "failed", text)
            raise
        set_pending(store, name, self.kind, self.names, None)
        record_event(store, name, self.action, self.names, "done")


def selector(kind: str, names: list[str]) -> str:
    """How the command line names these topics or groups: ``--topics 'a|b'`` (a name of
    letters, digits, '.', '_', '-' matches itself; anything else is escaped)."""
    plain = [n if _PLAIN.fullmatch(n) else re.escape(n) for n in names]
    return f"--{kind}s '{'|'.join(plain)}'"


def _ago(ms: int | None) -> str:
    if ms is None:
        return "earlier"
    seconds = max(time.time() - ms / 1000, 0)
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))
    return f"{when}, {seconds:,.0f}s ago"

"""How a migration looks on screen and in JSON: `migrate status`, `history`, the demo."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from kmigrate.model.migrations import Event

if TYPE_CHECKING:
    from kmigrate.migration.observe import Snapshot


def _n(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def _eta(seconds: float | None) -> str:
    return "" if seconds is None else f"~{seconds:,.0f}s"


def status_view(snap: Snapshot) -> RenderableType:
    # here, not at the top: `kmigrate migrate --help` loads this module, not the store
    from kmigrate.migration.status import next_steps

    m = snap.migration
    mirror = snap.mirror
    state = mirror.state if mirror else "never-started"
    head = Text.assemble(
        (f"migration {m.name}", "bold"),
        f": {m.plan.source} -> {m.plan.target}, {m.plan.switch_order.value}, mirror {state}",
        f" ({mirror.reason})" if mirror and mirror.reason else "",
    )
    topics = Table(header_style="bold", title_justify="left")
    for column in ("topic", "state", "partitions", "lag", "records/s", "to in-sync"):
        topics.add_column(column)
    for t in snap.topics:
        topics.add_row(
            t.name,
            t.phase.value + (f" ({t.pending}: interrupted?)" if t.pending else ""),
            str(t.partitions),
            _n(t.lag),
            f"{t.records_per_s:,.0f}",
            _eta(t.to_in_sync_s),
        )
    parts: list[RenderableType] = [head, topics]
    if snap.groups:
        groups = Table(header_style="bold")
        for column in ("group", "state", "members src/tgt", "lag on source", "committed on target"):
            groups.add_column(column)
        for g in snap.groups:
            groups.add_row(
                g.name,
                g.phase.value + (f" ({g.pending}: interrupted?)" if g.pending else ""),
                f"{g.source.members}/{g.target.members}",
                f"{g.source_lag:,}",
                f"{sum(g.target.committed.values()):,}" if g.target.committed else "-",
            )
        parts.append(groups)
    parts.append(Text("next: ", style="bold"))
    parts.extend(Text(f"  {s}") for s in next_steps(snap))
    return Group(*parts)


def history_rows(events: list[Event]) -> list[tuple[str, ...]]:
    return [
        (
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.at_ms / 1000)),
            e.actor,
            e.action,
            ", ".join(e.subjects),
            e.outcome,
            e.detail or "",
        )
        for e in events
    ]

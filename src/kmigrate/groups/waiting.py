"""Waiting for the mirror to reach stopped groups' positions (`groups migrate --wait`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from kmigrate.errors import MirrorError, NotTranslatableError
from kmigrate.groups.plan import GroupPlan, plan_groups
from kmigrate.groups.translation import waiting_for_mirror
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.mirror.status import run_state
from kmigrate.model.links import Link
from kmigrate.model.runs import LIVE_STATES
from kmigrate.store import Store
from kmigrate.store.runs import get_run
from kmigrate.waiting import WaitPolicy

# (records still to mirror, records to mirror when the wait began)
WaitProgress = Callable[[int, int], None]


def wait_for_mirror(
    store: Store,
    link: Link,
    plans: list[GroupPlan],
    source: ClusterAdmin,
    target: ClusterAdmin,
    wait_s: float,
    on_wait: WaitProgress | None,
    check: Callable[[GroupPlan], None],
) -> list[GroupPlan]:
    """Re-plan the groups still waiting until the mirror has read past every commit of
    every (stopped) group; ``check`` judges each new plan (members, say).

    A cluster that blinks meanwhile (a broker restart, a coordinator moving) is waited
    out within the same ``wait_s``, as the mirror waits it out."""
    current = {p.group: p for p in plans}
    total = _to_go(plans)
    deadline = time.monotonic() + wait_s
    policy = WaitPolicy(
        wait_s,
        roles={link.source: "source", link.target: "target"},
        resume_hint="nothing changed; run again once it is back",
    )
    while waiting := sorted(g for g, p in current.items() if waiting_for_mirror(p.partitions)):
        if on_wait is not None:
            on_wait(_to_go(current.values()), total)
        state, reason = run_state(get_run(store, link.name))
        if state not in LIVE_STATES:
            raise MirrorError(
                f"the mirror of link '{link.name}' is {state}{': ' + reason if reason else ''}; "
                f"start it (`kmigrate mirror start`) so it can reach consumer group "
                f"'{waiting[0]}'{_more(waiting)}"
            )
        if time.monotonic() > deadline:
            raise NotTranslatableError(
                f"the mirror of link '{link.name}' did not reach consumer group "
                f"'{waiting[0]}''s position{_more(waiting)} within {wait_s:.0f}s "
                f"({_to_go(current.values()):,} records to go); nothing changed"
            )
        time.sleep(0.5)
        again = policy.run(
            lambda: plan_groups(store, link, waiting, source, target, fall_back=False)
        )
        for plan in again:
            check(plan)
            current[plan.group] = plan
    if on_wait is not None:
        on_wait(0, total)
    return [current[p.group] for p in plans]


def _to_go(plans: Iterable[GroupPlan]) -> int:
    return sum(t.behind for p in plans for t in waiting_for_mirror(p.partitions))


def _more(groups: list[str]) -> str:
    return f" (and {len(groups) - 1} more)" if len(groups) > 1 else ""

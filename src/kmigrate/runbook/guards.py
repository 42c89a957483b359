"""What a phased operation must find unchanged after every phase, read until it does
or the wait ends: who may do what (the authorization probes, remembered in the journal
before the first step), and whatever else an operation compares (its metadata)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from kmigrate.authz import ask
from kmigrate.config import ClusterConfig
from kmigrate.errors import ConflictError
from kmigrate.runbook.operation import Phased

T = TypeVar("T")
BASELINE = "baseline"  # the journal's phase for what was read before the first step
AUTHORIZATION = "authorization"


def remembered(run: Phased, step: str, phase: str = BASELINE) -> str | None:
    """What was journaled as ``step`` of ``phase`` (the first look), if anything."""
    found = [e for e in run.op.history() if e.phase == phase and e.step == step and e.detail]
    return found[-1].detail if found else None


def remember_authorization(run: Phased, cluster: ClusterConfig) -> None:
    """Ask the cluster's authorizer the probes its ACLs suggest, and journal the answers;
    once per operation (a run killed in its first phase must not take a new baseline
    from a cluster that phase may have changed)."""
    if remembered(run, AUTHORIZATION) is not None:
        return
    answered = run.patiently(lambda: ask.first_look(cluster))
    run.op.record(BASELINE, AUTHORIZATION, "done", answered.to_json())
    run.report(f"authorization probed: {answered.summary}")


def same_authorization(run: Phased, cluster: ClusterConfig, phase: str) -> None:
    """The authorizer answers every remembered probe as it did before the first step."""
    probed = remembered(run, AUTHORIZATION)
    if probed is None:
        return
    then = ask.Probed.from_json(probed)
    now = until_same(
        run,
        lambda: then.again(cluster),
        then.differences,
        f"after {phase} the authorizer of '{run.op.cluster}' decides differently",
    )
    run.op.done(phase, "authorization unchanged", now.summary)


def until_same(
    run: Phased, read: Callable[[], T], differences: Callable[[T], list[str]], refusal: str
) -> T:
    """``read()`` until ``differences`` finds none (a broker just restarted may still be
    loading); after ``run.timeout_s`` a ConflictError naming the first five."""
    deadline = time.monotonic() + run.timeout_s
    while True:
        found = run.patiently(read)
        changed = differences(found)
        if not changed:
            return found
        if time.monotonic() > deadline:
            raise ConflictError(
                f"{refusal}: "
                + "; ".join(changed[:5])
                + (f" (and {len(changed) - 5} more)" if len(changed) > 5 else "")
            )
        run.status(f"asking again: {changed[0]}")
        time.sleep(1.0)

"""How a long-running command waits out a cluster outage and says so (one wording for
all of them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kmigrate.cli import render
from kmigrate.durations import duration_text
from kmigrate.waiting import WaitPolicy


def announced(
    max_unavailable: float,
    *,
    meanwhile: str = "",
    resumes: str = "",
    resume_hint: str = "",
    roles: Mapping[str, str] | None = None,
    pause: Callable[[float], bool] | None = None,
) -> WaitPolicy:
    """A wait policy of ``max_unavailable`` seconds whose start and end are progress
    lines: "<cluster> unavailable since <time>: <why>; retrying (for up to <d>)<meanwhile>"
    and "<cluster> available again after <d><resumes>"."""
    policy = WaitPolicy(
        max_unavailable,
        on_wait=lambda o: render.progress(
            f"{policy.who(o.cluster)} unavailable since {o.clock()}: {o.condition}; retrying "
            f"(for up to {duration_text(max_unavailable)}){meanwhile}"
        ),
        on_recover=lambda o: render.progress(
            f"{policy.who(o.cluster)} available again after "
            f"{duration_text(policy.lasted(o))}{resumes}"
        ),
        pause=pause,
        roles=roles,
        resume_hint=resume_hint,
    )
    return policy

"""What `zk migrate` and the `kraft` commands share: who restarts servers and brokers
(the operator's command templates, or the sandbox that runs the cluster), the frame a
run acts in (the operation's lock, an admin client, a status line), and the journal's
rendering (`zk history`, `kraft history`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from kmigrate.cli import render
from kmigrate.config import ClusterConfig, Settings
from kmigrate.errors import ConfigError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.operations import MoveEvent
from kmigrate.runbook.operation import Operation
from kmigrate.sandbox.state import STATE_FILE, load_state

T = TypeVar("T")


def choose_operator(
    settings: Settings,
    cluster: str,
    templates_given: bool,
    by_templates: Callable[[], T],
    in_sandbox: Callable[[Path], T],
    options: str,
) -> T:
    """The operator's templates when given, else the sandbox when it runs ``cluster``;
    else a ConfigError asking for ``options`` ("--broker-command and ...")."""
    if templates_given:
        return by_templates()
    folder = settings.path.parent if settings.path else Path.cwd()
    if is_sandbox_cluster(folder, cluster):
        return in_sandbox(folder)
    raise ConfigError(f"cluster '{cluster}' is not a sandbox cluster: pass {options}")


def is_sandbox_cluster(folder: Path, cluster: str) -> bool:
    """Whether the sandbox in ``folder`` runs ``cluster``."""
    return (folder / STATE_FILE).is_file() and cluster in load_state(folder.resolve()).clusters


@contextmanager
def acting(
    op: Operation, command: str, cluster: ClusterConfig
) -> Iterator[tuple[ClusterAdmin, Callable[[str], None]]]:
    """The operation's lock for ``command``, an admin client of ``cluster``, and a status
    line's update function, for the length of one run."""
    with (
        op.exclusively(command),
        ClusterAdmin(cluster) as admin,
        render.StatusLine() as line,
    ):
        yield admin, line.update


def print_history(
    kafka: str, events: list[MoveEvent], as_json: bool, width: int | None = None
) -> None:
    """An operation's journal: JSON for scripts, else a table (details cut to ``width``)."""
    if as_json:
        render.print_json({"kafka": kafka, "events": events})
        return
    render.table(
        None,
        ["phase", "step", "outcome", "detail"],
        [(e.phase, e.step, e.outcome, (e.detail or "")[:width]) for e in events],
    )

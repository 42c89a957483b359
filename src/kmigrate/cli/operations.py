"""What `zk migrate` and the `kraft` commands share: who restarts servers and brokers
(the operator's command templates, or the sandbox that runs the cluster), the frame a
run acts in (the operation's lock, an admin client, a status line), and the journal's
rendering (`zk history`, `kraft history`); and the checks their input gets before
anything is contacted (the cluster flag, plan files, the output file, ZooKeeper paths)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kmigrate.cli import render
from kmigrate.cli.options import cluster_option, renamed
from kmigrate.errors import ConfigError, NotFoundError
from kmigrate.model.operations import MoveEvent
from kmigrate.sandbox.state import STATE_FILE, load_state

if TYPE_CHECKING:
    from kmigrate.config import Settings
    from kmigrate.runbook.operation import Operation

T = TypeVar("T")
A = TypeVar("A")
F = TypeVar("F", bound=Callable[..., Any])


def cluster_flag(command: F) -> F:
    """`--cluster NAME` (the ZooKeeper-mode Kafka cluster; old spelling `--kafka`).
    Declared not required: the command calls `options.require(cluster_name, "--cluster")`."""
    command = renamed("--kafka", "--cluster", "cluster_name")(command)
    return cluster_option(help="The ZooKeeper-mode Kafka cluster.", required=False)(command)


def read_plan(path: Path, parse: Callable[[str, str], T]) -> T:
    """The plan in the file ``path``, parsed by ``parse(text, where)``: a missing file is
    a named thing that does not exist (exit 4); anything but a readable UTF-8 text file
    is a usage error naming the file (exit 2)."""
    if not path.exists():
        raise NotFoundError(f"plan file {path} does not exist")
    from kmigrate.config import read_user_file

    return parse(read_user_file(path, "plan file"), str(path))


def zk_path(value: str, option: str) -> str:
    """A ZooKeeper path such as ``/kafka`` (``/`` is the root, given as ""), or one line
    saying why not."""
    parts = value.split("/")
    if not value.startswith("/") or (
        value != "/" and ("" in parts[1:] or {".", ".."} & set(parts))
    ):
        raise ConfigError(
            f"{option} {value!r}: give a ZooKeeper path such as /kafka (starts with '/', no "
            "empty, '.' or '..' parts, no trailing '/')"
        )
    return "" if value == "/" else value


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
    op: Operation, command: str, admin: Callable[[], AbstractContextManager[A]]
) -> Iterator[tuple[A, Callable[[str], None]]]:
    """The operation's lock for ``command``, a cluster's admin client (``admin()``, opened
    once the lock is held), and a status line's update function, for one run."""
    with (
        op.exclusively(command),
        admin() as opened,
        render.StatusLine() as line,
    ):
        yield opened, line.update


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


def host_port(value: str, option: str) -> tuple[str, int]:
    """``HOST:PORT`` -> (host, port), the port 1-65535, or one line naming ``option``."""
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ConfigError(f"{option} {value!r}: give HOST:PORT with a port from 1 to 65535")
    return host, int(port)

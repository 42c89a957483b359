"""The operator of a migration to KRaft on real hosts: the operator's own command
templates, run by the shell once per broker or controller.

* ``--broker-command``: apply the configuration changes in ``{changes_file}`` to one
  broker's server.properties and restart it. The file has one line per change,
  ``set KEY=VALUE`` or ``remove KEY``. Placeholders ``{host}``, ``{broker}``,
  ``{changes_file}``, ``{quick_stop}`` (``true`` when its controlled shutdown cannot
  finish: a broker in migration mode whose KRaft controllers were deprovisioned waits
  5 minutes for them; stop it after a few seconds instead).
* ``--controller-command``: act on one KRaft controller: ``{action}`` is ``start``
  (install ``{properties_file}`` as its configuration, format its storage with
  ``{cluster_id}`` unless it is, and (re)start it), ``stop`` or ``deprovision`` (stop and
  delete its storage). Placeholders ``{host}``, ``{id}``, ``{action}``,
  ``{properties_file}``, ``{cluster_id}``.

Values are shell-quoted. kmigrate observes what each command should lead to (a broker
back in the wanted mode, a controller answering) itself; a command only starts the work.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kmigrate import templates
from kmigrate.kraft.plan import ConfigChange

PLACEHOLDERS = {
    "broker": ("--broker-command", {"host", "broker", "changes_file", "quick_stop"}),
    "controller": (
        "--controller-command",
        {"host", "id", "action", "properties_file", "cluster_id"},
    ),
}


@dataclass(frozen=True)
class Templates:
    broker: str | None = None
    controller: str | None = None

    @property
    def given(self) -> bool:
        return bool(self.broker or self.controller)

    def check(self) -> None:
        templates.check_all(PLACEHOLDERS, self, "kraft")


def changes_text(change: ConfigChange) -> str:
    return "".join(f"remove {k}\n" for k in change.remove) + "".join(
        f"set {k}={v}\n" for k, v in change.set.items()
    )


class CommandOperator:
    """Runs the templates; see the module's docstring."""

    def __init__(
        self,
        given: Templates,
        broker_hosts: Mapping[int, str],
        controller_hosts: Mapping[int, str],
        report: Callable[[str], None],
        timeout_s: float = 600.0,
    ) -> None:
        given.check()
        self.broker_hosts = {b: e.rsplit(":", 1)[0] for b, e in broker_hosts.items()}
        self.controller_hosts = dict(controller_hosts)
        self._run = templates.Runner(
            PLACEHOLDERS, given, report, timeout_s, "the same `kmigrate kraft` command"
        )
        self.folder = Path(tempfile.mkdtemp(prefix="kmigrate-kraft-"))

    def start_controller(self, node_id: int, properties: dict[str, str], cluster_id: str) -> None:
        path = self.folder / f"controller-{node_id}.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
        self._controller(node_id, "start", path, cluster_id)

    def stop_controller(self, node_id: int, *, wipe: bool) -> None:
        self._controller(node_id, "deprovision" if wipe else "stop", Path("/dev/null"), "")

    def _controller(self, node_id: int, action: str, path: Path, cluster_id: str) -> None:
        self._run(
            "controller",
            f"{action} controller {node_id}",
            host=self.controller_hosts[node_id],
            id=node_id,
            action=action,
            properties_file=path,
            cluster_id=cluster_id,
        )

    def restart_broker(self, broker_id: int, change: ConfigChange, *, quick_stop: bool) -> None:
        path = self.folder / f"broker-{broker_id}.changes"
        path.write_text(changes_text(change))
        self._run(
            "broker",
            f"restart broker {broker_id}",
            host=self.broker_hosts[broker_id],
            broker=broker_id,
            changes_file=path,
            quick_stop="true" if quick_stop else "false",
        )

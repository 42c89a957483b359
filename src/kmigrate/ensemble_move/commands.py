"""The operator of a move on real hosts: the operator's own command templates, run by
the shell once per broker or ZooKeeper server.

* ``--restart-command``: restart one broker with a new ``zookeeper.connect``.
  Placeholders ``{host}``, ``{broker}``, ``{zookeeper_connect}``.
* ``--zk-stop-command``: stop one ZooKeeper server. ``{host}``, ``{id}``.
* ``--zk-start-command``: start one ZooKeeper server with the dynamic configuration in
  ``{dynamic_file}`` (a local file of ``server.N=...`` lines to put in place of its
  zoo.cfg.dynamic), its data folder emptied first when ``{fresh}`` is ``true``.
  ``{host}``, ``{id}``, ``{dynamic_file}``, ``{fresh}``.

Values are shell-quoted. kmigrate waits for what each command should lead to (the
broker re-registered, the server serving) itself; a command only has to start the work.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kmigrate import templates
from kmigrate.ensemble_move.members import Member
from kmigrate.errors import ConfigError

PLACEHOLDERS = {
    "restart_broker": ("--restart-command", {"host", "broker", "zookeeper_connect"}),
    "stop_server": ("--zk-stop-command", {"host", "id"}),
    "start_server": ("--zk-start-command", {"host", "id", "dynamic_file", "fresh"}),
}


@dataclass(frozen=True)
class Templates:
    restart_broker: str | None = None
    stop_server: str | None = None
    start_server: str | None = None

    @property
    def given(self) -> bool:
        return any((self.restart_broker, self.stop_server, self.start_server))

    def check(self) -> None:
        """All three are needed (every move restarts brokers and ZooKeeper servers), each
        with known placeholders only."""
        templates.check_all(PLACEHOLDERS, self, "zk migrate")


class CommandOperator:
    """Runs the templates; see the module's docstring."""

    def __init__(
        self,
        given: Templates,
        servers: Sequence[Member],
        broker_hosts: Mapping[int, str],
        report: Callable[[str], None],
        timeout_s: float = 600.0,
    ) -> None:
        given.check()
        self.servers = {m.node_id: m for m in servers}
        self.broker_hosts = dict(broker_hosts)
        self._run = templates.Runner(
            PLACEHOLDERS, given, report, timeout_s, "`kmigrate zk migrate`"
        )
        self.folder = Path(tempfile.mkdtemp(prefix="kmigrate-zk-"))

    def stop_server(self, node_id: int) -> None:
        host = self.servers[node_id].host
        self._run("stop_server", f"stop ZooKeeper server {node_id}", host=host, id=node_id)

    def start_server(self, node_id: int, members: Sequence[int], *, fresh: bool) -> None:
        dynamic = self.folder / f"zoo.cfg.dynamic.{node_id}"
        dynamic.write_text("".join(self.servers[i].line() + "\n" for i in members))
        self._run(
            "start_server",
            f"start ZooKeeper server {node_id}",
            host=self.servers[node_id].host,
            id=node_id,
            dynamic_file=dynamic,
            fresh="true" if fresh else "false",
        )

    def restart_broker(self, broker_id: int, zookeeper_connect: str) -> None:
        host = self.broker_hosts.get(broker_id)
        if host is None:
            raise ConfigError(f"the host of broker {broker_id} is not known; plan the move again")
        self._run(
            "restart_broker",
            f"restart broker {broker_id}",
            host=host,
            broker=broker_id,
            zookeeper_connect=zookeeper_connect,
        )

    def recover_broker(self, broker_id: int, zookeeper_connect: str, *, registered: bool) -> bool:
        if registered:
            return False
        self.restart_broker(broker_id, zookeeper_connect)
        return True

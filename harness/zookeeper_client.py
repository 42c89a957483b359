"""A non-Kafka user of a ZooKeeper ensemble, as an ensemble move must keep it: one
session, writing its own path every 0.1 s, its connection states and writes counted.
The ensemble-move test and bench/zk_move.py both run one beside a move."""

from __future__ import annotations

import threading

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException


class OtherClient(threading.Thread):
    """Writes /app on ``connect``; with ``alive_node`` it also holds the ephemeral
    /app/alive, which lives exactly as long as its session."""

    def __init__(self, connect: str, *, alive_node: bool = True) -> None:
        super().__init__(daemon=True)
        self.zk = KazooClient(hosts=connect, timeout=30.0)
        self.states: list[str] = []
        self.zk.add_listener(self.states.append)
        self.zk.start(timeout=15)
        self.session = self.zk.client_id[0]
        self.zk.ensure_path("/app")
        if alive_node:
            self.zk.create("/app/alive", b"", ephemeral=True)
        self.writes = self.failed_writes = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            try:
                self.zk.set("/app", str(self.writes).encode())
                self.writes += 1
            except KazooException:  # connection loss while its server restarts: again
                self.failed_writes += 1
            self.done.wait(0.1)

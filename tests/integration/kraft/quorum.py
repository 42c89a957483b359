"""KAFKA-20488 on a sandbox quorum of three: two voters frozen while the third runs
election after election, so the quorum comes back with an epoch far above ZooKeeper's
`/controller_epoch`."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from harness.helpers import wait_for
from kmigrate.sandbox.state import load_state
from kmigrate.zookeeper.session import session
from kmigrate.zookeeper.znodes import read_json


def epochs(connect: str) -> tuple[int, int | None]:
    """`/controller_epoch`, and the KRaft controller's epoch in `/controller` (None
    when no KRaft controller holds it: a broker writes -1 there)."""
    hosts, _, chroot = connect.partition("/")
    with session(hosts, hosts) as zk:
        raw, _stat = zk.get(f"/{chroot}/controller_epoch")
        controller = read_json(zk, f"/{chroot}/controller") or {}
    kraft = controller.get("kraftControllerEpoch", -1)
    return int(raw.decode()), kraft if kraft >= 0 else None


def hazard(connect: str) -> bool:
    zk_epoch, kraft_epoch = epochs(connect)
    return kraft_epoch is not None and kraft_epoch > zk_epoch + 1


def strand(directory: Path, cluster: str, connect: str) -> int:
    """Freeze two of the three voters until the third's elections reach an epoch above
    what a revert's elections add, let them go, and wait for a KRaft leader again with
    its epoch above `/controller_epoch` + 1; that epoch."""
    controllers = load_state(directory).clusters[cluster].controllers
    frozen = [c.pid for c in controllers[:2] if c.pid]
    assert len(controllers) == 3 and len(frozen) == 2
    folder = controllers[2].folder(directory / cluster)
    stranded = folder / "data" / "__cluster_metadata-0" / "quorum-state"
    goal = epochs(connect)[0] + 10
    try:
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        wait_for(lambda: json.loads(stranded.read_text())["leaderEpoch"] >= goal, timeout=120,
                 message=f"the stranded voter's elections to reach epoch {goal}")  # fmt: skip
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
    wait_for(lambda: hazard(connect), timeout=90,
             message="a KRaft leader again, its epoch above /controller_epoch + 1")  # fmt: skip
    kraft_epoch = epochs(connect)[1]
    assert kraft_epoch is not None
    return kraft_epoch

"""After a finished move, each ensemble still holds the other side's data: the source a
stale copy of Kafka's tree, the target a copy of the source's other clients' paths.
Clean-up lists both and, once confirmed, deletes them.

Pure listing logic apart from the ZooKeeper reads; the CLI asks for confirmation.
"""

from __future__ import annotations

from dataclasses import dataclass

from kmigrate.ensemble_move.plan import ZkMovePlan
from kmigrate.errors import ConflictError
from kmigrate.zookeeper.session import session


@dataclass(frozen=True)
class Leftovers:
    source_paths: list[str]  # Kafka's chroot on the source ensemble
    target_paths: list[str]  # everything on the target that is not Kafka's


def leftovers(plan: ZkMovePlan) -> Leftovers:
    """What clean-up would delete on each side (nothing is changed)."""
    if not plan.chroot:
        raise ConflictError(
            "Kafka runs at the ensemble's root (no chroot): its znodes and other clients' "
            "share the top level, so clean-up cannot tell them apart; clean up by hand"
        )
    top = "/" + plan.chroot.strip("/").split("/")[0]
    with session(plan.source.connect, plan.source.name) as zk:
        source = [plan.chroot] if zk.exists(plan.chroot) else []
    with session(plan.target.connect, plan.target.name) as zk:
        target = sorted(f"/{child}" for child in zk.get_children("/") if child != "zookeeper")
    return Leftovers(source, [p for p in target if p != top])


def delete(connect: str, name: str, paths: list[str]) -> None:
    with session(connect, name) as zk:
        for path in paths:
            zk.delete(path, recursive=True)

"""Phased operations as the store keeps them: one record per kind and cluster (its plan
and the phase reached) and the journal of its steps, in order."""

from __future__ import annotations

from dataclasses import dataclass

ENSEMBLE_MOVE = "ensemble-move"  # a Kafka cluster to another ZooKeeper ensemble (zk/)
KRAFT_CONVERSION = "kraft-conversion"  # a ZooKeeper-mode cluster to KRaft (kraft/)


@dataclass(frozen=True)
class MoveRecord:
    """One operation of one kind on one cluster: its plan and the phase it reached."""

    kafka: str
    plan_yaml: str
    phase: str
    updated_ms: int


@dataclass(frozen=True)
class MoveEvent:
    """One step of an operation, as its journal has it."""

    at_ms: int
    phase: str
    step: str
    outcome: str  # started | done | skipped | refused | failed
    detail: str | None

"""A phased operation on one cluster (an ensemble move, a KRaft conversion): its lock, the
journal of its steps, the phase it reached, and running the phases not reached yet.

Every step of an operation first looks at the world to see whether it is done already,
so a command killed at any moment resumes by running it again: the frame remembers the
phase reached and journals what each step did (`zk history`, `kraft history`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from kmigrate.errors import KafkaOperationError, KMigrateError
from kmigrate.model.operations import MoveEvent, MoveRecord
from kmigrate.runbook.lock import held
from kmigrate.store import Store, operations
from kmigrate.store.locks import Holder
from kmigrate.waiting import WaitPolicy

T = TypeVar("T")


def _silent(_text: str) -> None:
    pass


@dataclass(frozen=True)
class Kind:
    """One kind of operation: how the store and the lock key it, how messages name it."""

    name: str  # the store's kind (kmigrate.model.operations)
    lock: str  # the lock subject's prefix: "<lock>:<cluster>"
    title: str  # "ZooKeeper move": "... in the middle of a ZooKeeper move"
    busy: str  # "the ZooKeeper move of cluster '{cluster}'": "... is busy"
    noun: str  # "move": "taking over the move's lock"
    resume: str  # after a wait that ran out: "run `kmigrate zk migrate` again to resume, ..."

    def of(self, store: Store, cluster: str, report: Callable[[str], None] = _silent) -> Operation:
        """The cluster's operation of this kind, reporting through ``report``."""
        return Operation(self, store, cluster, report)


@dataclass(frozen=True)
class Operation:
    """One kind of operation on one cluster, as one command acts on it."""

    kind: Kind
    store: Store
    cluster: str
    report: Callable[[str], None] = _silent

    def begin(self, plan_yaml: str) -> MoveRecord:
        """The operation under way (which must run ``plan_yaml``), or a new one."""
        return operations.begin(
            self.store, self.kind.name, self.cluster, plan_yaml, self.kind.title
        )

    def get(self) -> MoveRecord | None:
        return operations.get(self.store, self.kind.name, self.cluster)

    def set_phase(self, phase: str) -> None:
        operations.set_phase(self.store, self.kind.name, self.cluster, phase)

    def record(self, phase: str, step: str, outcome: str, detail: str | None = None) -> None:
        operations.record(self.store, self.kind.name, self.cluster, phase, step, outcome, detail)

    def history(self) -> list[MoveEvent]:
        return operations.history(self.store, self.kind.name, self.cluster)

    def interrupted(self, step: str) -> bool:
        """Whether ``step`` began and never ended (a command killed in the middle of it)."""
        return operations.last_outcome(self.store, self.kind.name, self.cluster, step) == "started"

    def done(self, phase: str, step: str, detail: str | None = None) -> None:
        """Journal a step done, and say so."""
        self.record(phase, step, "done", detail)
        self.report(f"{phase}: {step}" + (f" ({detail})" if detail else ""))

    @contextmanager
    def exclusively(self, command: str) -> Iterator[None]:
        """One command at a time acts on the operation (a second refuses, naming the
        first); the lock of a killed one is taken over, and journaled."""

        def taken_over(gone: Holder) -> None:
            detail = f"pid {gone.pid} (`kmigrate {gone.command}`) had died"
            self.record("lock", "taken over", "done", detail)
            self.report(f"taking over the {self.kind.noun}'s lock: {detail}")

        with held(
            self.store,
            f"{self.kind.lock}:{self.cluster}",
            command,
            what=self.kind.busy.format(cluster=self.cluster),
            on_takeover=taken_over,
        ):
            yield

    def run_phases(
        self,
        phases: Sequence[str],
        step: Callable[[str], None],
        *,
        reached: str,
        until: str | None = None,
    ) -> None:
        """``step(phase)`` for each phase after ``reached`` up to ``until`` (default: the
        last), the phase stored as reached after each; a refusal is journaled and raised."""
        start = phases.index(reached) + 1 if reached in phases else 0
        end = phases.index(until) + 1 if until is not None else len(phases)
        for phase in phases[start:end]:
            self.report(f"phase {phase}")
            try:
                step(phase)
            except KMigrateError as exc:
                self.record(phase, "stopped", "refused", exc.message)
                raise
            self.set_phase(phase)

    def wait(
        self,
        condition: Callable[[], bool],
        what: str,
        timeout_s: float,
        status: Callable[[str], None] = _silent,
    ) -> None:
        """Until ``condition()`` holds, saying what it waits for through ``status``; after
        ``timeout_s`` a KafkaOperationError that says how to resume."""
        self.wait_clear(lambda: None if condition() else "", what, timeout_s, status)

    def wait_clear(
        self,
        problem: Callable[[], str | None],
        what: str,
        timeout_s: float,
        status: Callable[[str], None] = _silent,
    ) -> None:
        """Until ``problem()`` is None, as :meth:`wait`; the status lines and the error
        after ``timeout_s`` also name the problem last seen (a broker down, a partition
        under-replicated), so an operator sees what holds the step."""
        started = time.monotonic()
        while (found := problem()) is not None:
            elapsed = time.monotonic() - started
            now = f": {found}" if found else ""
            status(f"waiting for {what} ({elapsed:.0f}s of {timeout_s:g}s){now}")
            if elapsed > timeout_s:
                raise KafkaOperationError(
                    f"waited {timeout_s:g}s for {what}"
                    + (f" (last seen: {found})" if found else "")
                    + f"; {self.kind.resume}"
                )
            time.sleep(0.3)


class Phased:
    """What a run of an operation acts through in every phase (a dataclass supplies
    ``op``, ``timeout_s`` and ``status``): its report, and its waits."""

    op: Operation
    timeout_s: float
    status: Callable[[str], None]

    @property
    def report(self) -> Callable[[str], None]:
        return self.op.report

    def patiently(self, step: Callable[[], T]) -> T:
        """``step``, waiting out a cluster that blinks (a broker restarting) for up to
        ``timeout_s``: the shared wait policy."""
        return WaitPolicy(self.timeout_s).run(step)

    def wait(self, condition: Callable[[], bool], what: str) -> None:
        """Until ``condition()`` holds, for up to ``timeout_s``."""
        self.op.wait(condition, what, self.timeout_s, self.status)

    def wait_clear(self, problem: Callable[[], str | None], what: str) -> None:
        """Until ``problem()`` is None, for up to ``timeout_s``, naming the last problem."""
        self.op.wait_clear(problem, what, self.timeout_s, self.status)

"""Transactions and where partitions live: the rules the gateway's transactional APIs and
its moves share.

Transactions through the gateway run on the group home, the one backend whose
transaction coordinator also sees the group's offsets (consume-transform-produce commits
them inside the transaction). A transaction may touch only partitions the routing table
places on the group home: Kafka makes a transaction atomic within one cluster, never
across two (``elsewhere``, ``refusal``).

A move must never split a transaction: while the move's fence holds a partition's
writes, ``until_closed`` asks the origin's transaction coordinators (ListTransactions on
every broker, then DescribeTransactions of the open ones on the broker that listed them)
whether an open transaction covers the partition, and waits until none does; after
``timeout_s`` the move is refused with the transactional ids named (``still_open``).

Pure: ``elsewhere``, ``refusal``, ``covering``, ``still_open``. The rest asks backends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from kmigrate.errors import ConflictError
from kmigrate.gateway.control.routes import RoutingTable
from kmigrate.gateway.protocol.backend import Backend, BackendUnavailable
from kmigrate.gateway.protocol.entities import build
from kmigrate.kafka.protocol.wire import request_type

Key = tuple[str, int]  # (topic, partition)
# Transaction states whose partitions may still get records or markers (Kafka's
# TransactionState names, as ListTransactions filters them).
OPEN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")
POLL_S = 0.2


@dataclass(frozen=True)
class OpenTransaction:
    transactional_id: str
    producer_id: int
    state: str
    partitions: frozenset[Key]


class TransactionsUnknown(Exception):
    """A backend could not say which transactions are open (a coordinator loading,
    moving, or unreachable)."""


# ---------------------------------------------------------------- pure rules


def elsewhere(routes: RoutingTable, home: str, keys: Iterable[Key]) -> dict[Key, str]:
    """The routed partitions among ``keys`` that live on a cluster other than ``home``,
    with that cluster (a partition not routed at all is not in the answer)."""
    found = {}
    for topic, partition in keys:
        cluster = routes.cluster_of(topic, partition)
        if cluster is not None and cluster != home:
            found[(topic, partition)] = cluster
    return found


def refusal(transactional_id: str, home: str, outside: Mapping[Key, str]) -> str:
    """Why a transaction touching ``outside`` partitions is refused, in one line."""
    where = ", ".join(f"{t}[{p}] is on cluster '{c}'" for (t, p), c in sorted(outside.items()))
    return (
        f"transaction '{transactional_id}' refused: {where}, and transactions through the "
        f"kmigrate gateway run on the group home '{home}' only (Kafka cannot make one "
        "transaction atomic across two clusters); route the partition to the group home "
        "or write it outside the transaction"
    )


def covering(
    transactions: Iterable[OpenTransaction], topic: str, partitions: Iterable[int]
) -> dict[int, list[str]]:
    """Per partition of ``topic`` among ``partitions``, the transactional ids of the open
    transactions that cover it (partitions no open transaction covers are left out)."""
    chosen = set(partitions)
    found: dict[int, list[str]] = {}
    for txn in transactions:
        for t, p in sorted(txn.partitions):
            if t == topic and p in chosen:
                found.setdefault(p, []).append(txn.transactional_id)
    return {p: sorted(set(ids)) for p, ids in sorted(found.items())}


def still_open(topic: str, covered: Mapping[int, list[str]], waited_s: float) -> str:
    """Why a move is refused: transactions stayed open on its partitions."""
    which = "; ".join(
        f"{topic}[{p}]: transactional id {', '.join(repr(i) for i in ids)}"
        for p, ids in sorted(covered.items())
    )
    return (
        f"open transactions did not end within {waited_s:g}s ({which}); a move never "
        "splits a transaction: commit or abort them (or let them time out) and run the "
        "command again"
    )


# ---------------------------------------------------------------- asking backends


async def open_transactions(backend: Backend) -> list[OpenTransaction]:
    """The open transactions every broker of ``backend`` coordinates, with their
    partitions."""
    found = []
    for broker in sorted(backend.view.brokers):
        listed = await backend.call_broker(
            broker, build(request_type(66, 0), state_filters=OPEN_STATES, producer_id_filters=())
        )
        _check(backend, broker, "list", listed.error_code)
        ids = tuple(t.transactional_id for t in listed.transaction_states)
        if not ids:
            continue
        described = await backend.call_broker(
            broker, build(request_type(65, 0), transactional_ids=ids)
        )
        for txn in described.transaction_states:
            if txn.error_code == ErrorCode.transactional_id_not_found:
                continue  # ended and expired since it was listed
            _check(backend, broker, "describe", txn.error_code)
            if txn.transaction_state in OPEN_STATES:
                partitions = frozenset((t.topic, int(p)) for t in txn.topics for p in t.partitions)
                found.append(
                    OpenTransaction(
                        txn.transactional_id,
                        int(txn.producer_id),
                        txn.transaction_state,
                        partitions,
                    )
                )
    return found


def _check(backend: Backend, broker: int, what: str, code: ErrorCode) -> None:
    if code != ErrorCode.none:
        raise TransactionsUnknown(
            f"broker {broker} of cluster '{backend.name}' could not {what} its "
            f"transactions ({code.name})"
        )


async def until_closed(
    backends: Iterable[Backend],
    origins: Mapping[int, str],
    topic: str,
    timeout_s: float,
    progress: Callable[[str], None],
) -> None:
    """Return once no open transaction on its origin covers any partition of ``origins``
    (partition -> origin cluster), asking ``backends`` (started, one per origin, left
    open); refused (ConflictError naming the transactional ids) if one is still open
    after ``timeout_s``."""
    mine = [b for b in backends if b.name in set(origins.values())]
    await _Watch(mine, origins, topic, timeout_s).until_closed(progress)


async def started(backend: Backend) -> None:
    """``backend`` started; one that does not answer refuses the move (nothing moved)."""
    try:
        await backend.start()
    except BackendUnavailable as exc:
        raise ConflictError(
            f"cannot ask cluster '{backend.name}' about open transactions ({exc}); "
            "nothing moved: run the command again"
        ) from None


@dataclass
class _Watch:
    """The open transactions on a move's origins that cover its partitions."""

    backends: list[Backend]
    origins: Mapping[int, str]
    topic: str
    timeout_s: float

    async def until_closed(self, progress: Callable[[str], None]) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        told = False
        while (covered := await self._covered(late=loop.time() >= deadline)) != {}:
            if covered and not told:
                ids = sorted({i for found in covered.values() for i in found})
                wait = f"at most {self.timeout_s:g}s"
                progress(f"waiting ({wait}) for transaction(s) {ids} to end")
                told = True
            await asyncio.sleep(POLL_S)

    async def _covered(self, late: bool) -> dict[int, list[str]] | None:
        """Per partition, the open transactions covering it (None when a backend could
        not tell: asked again); refused once ``late``."""
        try:
            covered: dict[int, list[str]] = {}
            for backend in self.backends:
                if 66 not in backend.versions or 65 not in backend.versions:
                    continue  # Kafka before 3.0 cannot list transactions: nothing to ask
                mine = [p for p, c in self.origins.items() if c == backend.name]
                covered |= covering(await open_transactions(backend), self.topic, mine)
        except (TransactionsUnknown, BackendUnavailable) as exc:
            if late:
                raise ConflictError(
                    f"cannot tell whether a transaction is open on {self.topic} ({exc}); "
                    "nothing moved: run the command again"
                ) from None
            return None
        if covered and late:
            raise ConflictError(still_open(self.topic, covered, self.timeout_s))
        return covered

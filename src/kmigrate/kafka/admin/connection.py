"""The admin client of one cluster and the plumbing every admin concern shares.

Waiting on a future within the cluster's ``timeout_s``, translating what the client
raises into kmigrate errors, retrying a transient condition briefly, and starting
over with a fresh client after a broker restart.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

from kmigrate.config import ClusterConfig
from kmigrate.errors import ClusterUnavailableError, KMigrateError
from kmigrate.kafka.admin.isolated import Isolated
from kmigrate.kafka.clients import ErrorTrap, admin_client
from kmigrate.kafka.errors import translate
from kmigrate.kafka.retry import until_shown
from kmigrate.waiting import Backoff

T = TypeVar("T")
# Inside one call, a moving leader or coordinator is retried quickly and briefly.
BRIEF_BACKOFF = Backoff(first_s=0.1, max_s=1.0)
_RNG = random.Random()


class AdminConnection:
    """One cluster's admin client, shared by the admin concerns (topics, groups, ...)."""

    def __init__(self, cluster: ClusterConfig) -> None:
        self.cluster = cluster
        self.trap = ErrorTrap()
        self.client: Any = admin_client(cluster, self.trap)
        # The calls librdkafka can kill this process with go to a child process.
        self.isolated = Isolated(self)

    def close(self) -> None:
        # AdminClient has no close(); dropping the reference ends its threads.
        self.client = None
        self.isolated.close()

    @property
    def timeout(self) -> float:
        return self.cluster.timeout_s

    def briefly(self, step: Callable[[], T], also: tuple[type[KMigrateError], ...] = ()) -> T:
        """``step``, retried within the cluster's ``timeout_s`` while it fails with a
        transient condition (a leader or coordinator moving, a broker restarting) or one
        of ``also``. What lasts longer is the caller's to wait out (kmigrate.waiting)."""
        deadline = time.monotonic() + self.timeout
        attempt = 0
        retried: tuple[type[KMigrateError], ...] = (ClusterUnavailableError, *also)
        while True:
            try:
                return step()
            except retried as exc:
                if isinstance(exc, ClusterUnavailableError):
                    self.renew()
                if time.monotonic() >= deadline:
                    raise
            time.sleep(min(BRIEF_BACKOFF.delay(attempt, _RNG), max(deadline - time.monotonic(), 0)))
            attempt += 1

    def until_shown(self, shown: Callable[[], bool]) -> None:
        """:func:`kmigrate.kafka.retry.until_shown` within the cluster's ``timeout_s``;
        a read that fails ends the wait, not the caller: the change was made."""
        with contextlib.suppress(KMigrateError):
            until_shown(shown, self.timeout)

    def renew(self) -> None:
        """Start over with a fresh client. After a broker restart, librdkafka's admin
        ListOffsets keeps sending the leader epoch it cached before and is refused
        (FENCED_LEADER_EPOCH) until its metadata is refreshed, which it does not do by
        itself; a new client asks for metadata first."""
        self.client = admin_client(self.cluster, self.trap)
        self.isolated.close()  # its client is as stale: the next isolated call starts anew

    def wait(self, future: Future[T], action: str, **names: str | None) -> T:
        try:
            return future.result(timeout=self.timeout + 5)
        except KMigrateError:
            raise
        except Exception as exc:
            raise self.translate(exc, action, **names) from exc

    def translate(self, exc: Exception, action: str, **names: str | None) -> KMigrateError:
        # librdkafka hands client-level errors (connection refused, SASL failures) to
        # error_cb only from poll(); serve them so the message can say why.
        self.client.poll(0)
        return translate(exc, self.cluster, self.trap, action, **names)

    def wait_all(
        self, futures: Mapping[Any, Future[T]], action: str, **names: str | None
    ) -> dict[Any, T]:
        return {key: self.wait(f, action, **names) for key, f in futures.items()}

    def metadata(self) -> Any:
        """The cluster's metadata (every topic and its partitions), as the client gives it."""
        try:
            return self.client.list_topics(timeout=self.timeout)
        except Exception as exc:
            raise self.translate(exc, "list topics") from exc


def enum_name(value: Any) -> str:
    """A client enum (or its string) as its upper-case Kafka name, e.g. ``STABLE``."""
    return str(getattr(value, "name", value)).upper()

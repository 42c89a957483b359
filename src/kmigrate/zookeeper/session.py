"""kazoo sessions, with kazoo's errors translated to kmigrate's once, here.

Code that keeps a long-lived client and drives it itself (the gateway's registry, its
watches and ephemeral nodes) takes ``session_client`` here and the kazoo names it
catches from ``kmigrate.zookeeper``, so kazoo stays behind the adapter.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from kmigrate.errors import ClusterUnavailableError, ClusterUnreachableError

# kazoo logs every reconnect attempt at WARNING; kmigrate reports failures itself, once.
logging.getLogger("kazoo.client").setLevel(logging.ERROR)


def session_client(connect: str, name: str, timeout_s: float = 10.0) -> KazooClient:
    """A started, long-lived kazoo client (session timeout ``timeout_s``), or
    ClusterUnreachableError; the caller stops and closes it."""
    client = KazooClient(hosts=connect, timeout=timeout_s)
    try:
        client.start(timeout=timeout_s)
    except (KazooTimeoutError, KazooException, OSError) as exc:
        client.close()
        raise ClusterUnreachableError(
            f"cannot reach ZooKeeper ensemble '{name}' at {connect} within {timeout_s:g}s "
            f"({type(exc).__name__}); check its connect string and that it runs",
            cluster=name,
            condition="no ZooKeeper server reachable",
        ) from None
    return client


@contextmanager
def session(connect: str, name: str, timeout_s: float = 10.0) -> Iterator[KazooClient]:
    """A started kazoo client on ``connect`` (closed after), or ClusterUnreachableError;
    a kazoo error inside the block becomes ClusterUnavailableError."""
    client = session_client(connect, name, timeout_s)
    try:
        yield client
    except KazooException as exc:
        # ConnectionLoss while a server restarts or a reconfig moves the leader: transient.
        raise ClusterUnavailableError(
            f"ZooKeeper ensemble '{name}' dropped the connection ({type(exc).__name__})",
            cluster=name,
            condition=f"ZooKeeper {type(exc).__name__}",
        ) from None
    finally:
        client.stop()
        client.close()

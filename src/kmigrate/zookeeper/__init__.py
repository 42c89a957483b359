"""The ZooKeeper adapter: the only kmigrate package that talks to kazoo.

* ``session``: kazoo sessions, kazoo's errors translated to kmigrate's once, there;
* here: the kazoo names (client, state, exceptions) that code driving a long-lived
  client itself (the gateway's registry) uses, so it need not import kazoo;
* ``znodes``: reading a znode or its children, absent ones as None or empty;
* ``words``: four-letter words (a server's mode, version, last zxid);
* ``reconfig``: an ensemble's dynamic configuration, and changing it once;
* ``tree``: a server's znode tree, read, digested and compared;
* ``ensemble``: which ensemble a name or connect string means.
"""

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
)

from kmigrate.zookeeper.ensemble import resolve_ensemble
from kmigrate.zookeeper.session import session, session_client

__all__ = [
    "BadVersionError",
    "KazooClient",
    "KazooException",
    "KazooState",
    "NoNodeError",
    "NodeExistsError",
    "NotEmptyError",
    "resolve_ensemble",
    "session",
    "session_client",
]

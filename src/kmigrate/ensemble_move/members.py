"""ZooKeeper ensemble membership as values: dynamic-configuration lines and quorum math.

Pure: no ZooKeeper client here. A member is one ``server.N=host:quorum:election:role;
client`` line of ZooKeeper's dynamic configuration (``/zookeeper/config``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from kmigrate.errors import ConfigError

_LINE = re.compile(
    r"^server\.(?P<id>\d+)=(?P<host>[^:;]+):(?P<quorum>\d+):(?P<election>\d+)"
    r"(?::(?P<role>participant|observer))?(?:;(?:(?P<chost>[^:;]+):)?(?P<client>\d+))?$"
)


@dataclass(frozen=True)
class Member:
    node_id: int
    host: str
    quorum_port: int
    election_port: int
    role: str  # participant | observer
    client_host: str
    client_port: int | None

    @property
    def voter(self) -> bool:
        return self.role == "participant"

    @property
    def client_address(self) -> str | None:
        return f"{self.client_host}:{self.client_port}" if self.client_port else None

    def line(self) -> str:
        """The member as ZooKeeper writes it (what ``reconfig(joining=...)`` takes)."""
        text = (
            f"server.{self.node_id}={self.host}:{self.quorum_port}:{self.election_port}:{self.role}"
        )
        return f"{text};{self.client_address}" if self.client_port else text


def parse_member(line: str) -> Member:
    found = _LINE.match(line.strip())
    if found is None:
        raise ConfigError(f"not a ZooKeeper server line: '{line.strip()}'")
    client = found["client"]
    return Member(
        int(found["id"]),
        found["host"],
        int(found["quorum"]),
        int(found["election"]),
        found["role"] or "participant",
        found["chost"] or found["host"],
        int(client) if client else None,
    )


def parse_config(text: str) -> tuple[tuple[Member, ...], str | None]:
    """The members and the config version (hex) of a ``/zookeeper/config`` value."""
    members, version = [], None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("server."):
            members.append(parse_member(line))
        elif line.startswith("version="):
            version = line.split("=", 1)[1]
    return tuple(sorted(members, key=lambda m: m.node_id)), version


def voters(members: Iterable[Member]) -> list[Member]:
    return [m for m in members if m.voter]


def majority(voter_count: int) -> int:
    """How many voters a quorum needs."""
    return voter_count // 2 + 1


def keeps_majority(own_voters: int, other_voters: int) -> bool:
    """True when ``own_voters`` alone are a quorum of an ensemble that also has
    ``other_voters``: that side keeps serving whatever happens to the other."""
    return own_voters >= majority(own_voters + other_voters)


def connect_string(members: Iterable[Member]) -> str:
    return ",".join(a for m in members if (a := m.client_address))

"""Class-data sharing archives (AppCDS) for the sandbox's JVMs.

Loading and verifying Kafka's classes is most of a broker's start-up, paid again by
every broker, controller, storage format and ZooKeeper node the sandbox starts. The JVM
can instead map the classes an earlier run archived: `sandbox fetch` (and so `make
jars`) makes one archive per Kafka release for Kafka's JVMs and one for ZooKeeper's
server, from a throwaway node that serves a little traffic and archives what it loaded
when it exits (``-XX:ArchiveClassesAtExit``, sandbox/cds_build.py). Measured: a KRaft
broker serves after 1.8 s of CPU instead of 2.75 s.

Nothing here can break a start. The JVM checks an archive against itself and the class
path and ignores one that does not match (``-Xshare:auto``, the default), with a
warning in the node's log; the archive's name carries the JDK and the jars it was made
with. ``KMIGRATE_SANDBOX_CDS=0`` turns it off.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kmigrate.maven import cache_dir, files_key

DISABLE_ENV = "KMIGRATE_SANDBOX_CDS"
KAFKA = "broker"  # brokers, controllers and storage formatting: Kafka's own classes
ZOOKEEPER = "zookeeper"  # ZooKeeper's server (QuorumPeerMain) from Kafka 3.9's jars

_dumping: dict[str, Path] = {}  # role -> where the node started now writes its archive


def enabled() -> bool:
    return os.environ.get(DISABLE_ENV, "1") != "0"


def archive_path(java: str, jars: Path, role: str) -> Path:
    """Where the archive of ``role``'s classes from ``jars`` run by ``java`` lives."""
    key = files_key([Path(java).resolve(), *sorted(jars.glob("*.jar"))])
    return cache_dir() / "sandbox-cds" / f"{jars.name}-{role}-{key}.jsa"


def jvm_flags(java: str, jars: Path, role: str, *, node: bool = True) -> list[str]:
    """The flags that map ``role``'s archive (none when there is none yet); while one
    is being made (``dumping``), the flag that makes a ``node`` write it at exit."""
    if not enabled():
        return []
    if role in _dumping:
        return [f"-XX:ArchiveClassesAtExit={_dumping[role]}"] if node else []
    path = archive_path(java, jars, role)
    return [f"-XX:SharedArchiveFile={path}"] if path.is_file() else []


@contextmanager
def dumping(role: str, partial: Path) -> Iterator[None]:
    """Nodes of ``role`` started inside write their loaded classes to ``partial`` when
    they exit (the last one to exit wins: start one)."""
    _dumping[role] = partial
    try:
        yield
    finally:
        del _dumping[role]

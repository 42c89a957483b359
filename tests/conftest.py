"""Markers by folder: tests/unit are `unit`, tests/integration are `integration`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Same jar cache as the Makefile, so running pytest directly does not download again.
os.environ.setdefault("KMIGRATE_CACHE", str(ROOT / ".cache"))
# Every Spark JVM the tests start (in-process and in `kmigrate` subprocesses) logs to
# one file under .cache instead of one /tmp file per process.
os.environ.setdefault("KMIGRATE_SPARK_LOG", str(ROOT / ".cache" / "spark-tests.log"))
# The sandbox's brokers and ZooKeeper nodes start on half the CPU with the client
# compiler only (measured: 6.0 s -> 3.1 s of CPU per broker to ready, 15 s -> 8 s on a
# busy 2-core machine); the suite starts a few hundred of them and moves little data.
os.environ.setdefault("KMIGRATE_SANDBOX_JVM_FLAGS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


# Left out of `make test-fast`: each runs a mirror or verify on Spark, or starts clusters
# of its own (3 brokers, Kafka 3.9). `make test` runs everything.
SLOW = (
    "integration/mirror/test_mirror_copy.py",
    "integration/mirror/test_mirror_safety.py",
    "integration/mirror/test_mirror_standalone.py",
    "integration/mirror/test_ride_through.py",
    "integration/migration/",
    "integration/verify/",
    "integration/groups/",
    "integration/store/test_postgres_migration.py",
    "integration/sandbox/test_sandbox.py",
    "integration/sandbox/test_sandbox_zookeeper.py",
    "integration/ensemble_move/",
    "integration/kraft/",
    "integration/serve/test_console.py",
)


# `make test` runs pytest-xdist workers (TEST_WORKERS in the Makefile), each with its own
# session sandbox. Each file runs whole on one worker, and so does each package below
# whose conftest starts something for the package (PostgreSQL, verify's and the groups'
# mirrors start once, not once per worker). The gateway's package is split by file: a
# worker that runs one of its files starts a gateway of its own (~10 s), and the package
# is too long for one worker. Work is handed out in collection order as a worker runs
# dry, so the longest go first (measured, tests/README.md) and the unit tests fill the
# end. (xdist's own `--dist loadgroup` marks do not work with pytest 9: the scheduler
# below groups by path instead.)
WHOLE_PACKAGES = ("integration/store", "integration/verify", "integration/groups")
# The files that use the session's secure clusters (`locked` and `vault`: two SASL
# brokers) run on one worker, so one worker starts them, not every worker.
SECURE_GROUP = "secure clusters"
SECURE_FILES = (
    "integration/kafka/test_secure.py",
    "integration/gateway/test_gateway_auth.py",
    "integration/gateway/test_gateway_secure.py",
    "integration/preflight/test_clusters_check.py",
    "integration/migration/test_acls.py",
)
LONGEST_FIRST = (  # measured: run p5 of 2026-11-28, tests/README.md
    "integration/kraft/test_kraft_migration.py",
    "integration/mirror/test_ride_through.py",
    "integration/reassign/test_reassign.py",
    "integration/gateway/test_gateway_faults.py",
    "integration/kraft/test_kraft_tls.py",
    "integration/migration/test_demo_migration.py",
    "integration/kraft/test_kraft_onprem.py",
    "integration/docs/test_docs_examples.py",
    "integration/kraft/test_kraft_secure.py",
    SECURE_GROUP,
    "integration/groups",
    "integration/ensemble_move/test_zk_move.py",
    "integration/mirror/test_mirror_safety.py",
    "integration/ensemble_move/test_zk_rollback.py",
    "integration/sandbox/test_sandbox_zookeeper.py",
    "integration/migration/test_guards.py",
    "integration/migration/test_crash_resume.py",
    "integration/gateway/test_gateway_transactions.py",
    "integration/mirror/test_mirror_byte_edges.py",
    "integration/serve/test_console.py",
    "integration/mirror/test_mirror_standalone.py",
    "integration/gateway/test_gateway_client_order.py",
    "integration/gateway/test_gateway_admin.py",
    "integration/verify",
)


def xdist_group(path: Path) -> str:
    """The unit of work one worker runs whole: the secure clusters' files, a package of
    WHOLE_PACKAGES, else the file."""
    if not path.is_relative_to(ROOT / "tests"):
        return path.as_posix()
    relative = path.relative_to(ROOT / "tests").as_posix()
    if relative in SECURE_FILES:
        return SECURE_GROUP
    package = next((p for p in WHOLE_PACKAGES if relative.startswith(p + "/")), None)
    return package or relative


def _order(group: str) -> tuple[int, int]:
    if group in LONGEST_FIRST:
        return (0, LONGEST_FIRST.index(group))
    return (2, 0) if group.startswith("unit/") else (1, 0)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class WholeGroups(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(Path(config.rootpath, nodeid.split("::", 1)[0]))

    return WholeGroups(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: _order(xdist_group(Path(str(item.fspath)))))  # stable
    for item in items:
        path = Path(str(item.fspath))
        parts = path.parts
        if "unit" in parts:
            item.add_marker(pytest.mark.unit)
        elif "integration" in parts:
            item.add_marker(pytest.mark.integration)
        if any(slow in path.as_posix() for slow in SLOW):
            item.add_marker(pytest.mark.slow)

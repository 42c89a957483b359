"""A migration as a user runs it: a plan file, `kmigrate plan|migrate ...` processes, and
the store and clusters read back to check what changed (or that nothing did)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.helpers import CliResult, run_cli, unique, wait_for
from kmigrate.config import ClusterConfig, load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce
from kmigrate.migration.plan import load_plan
from kmigrate.model.cluster import TopicPartitionOffset
from kmigrate.model.records import Record
from kmigrate.store import store_for
from kmigrate.store.locks import pid_alive
from kmigrate.store.migrations import events_of, items_of
from kmigrate.store.runs import get_run
from tests.integration.conftest import Clusters
from tests.integration.mirror.harness import mirror_config


@dataclass
class Migration:
    """One test's migration: its own store, one topic, optionally one group."""

    clusters: Clusters
    folder: Path
    config: Path
    topic: str
    group: str
    name: str
    plan: Path

    def cli(self, *args: str, timeout: float = 240) -> CliResult:
        return run_cli(*args, config=str(self.config), timeout=timeout)

    def ok(self, *args: str, timeout: float = 240) -> CliResult:
        result = self.cli(*args, timeout=timeout)
        assert result.code == 0, f"kmigrate {' '.join(args)} failed: {result.stderr}"
        return result

    def status(self) -> dict[str, Any]:
        return json.loads(self.ok("migrate", "status", "--json", "--migration", self.name).stdout)

    def states(self) -> dict[str, tuple[str, str | None]]:
        """Every topic's and group's (state, pending), straight from the store."""
        store = store_for(load_settings(self.config))
        return {f"{i.kind}:{i.name}": (i.state, i.pending) for i in items_of(store, self.name)}

    def outcomes(self) -> list[tuple[str, str]]:
        store = store_for(load_settings(self.config))
        return [(e.action, e.outcome) for e in events_of(store, self.name)]

    def topic_state(self) -> str:
        return self.states()[f"topic:{self.topic}"][0]

    def wait_topic(self, state: str, timeout: float = 180) -> None:
        wait_for(
            lambda: self.status()["topics"][0]["state"] == state,
            timeout=timeout,
            interval=1.0,
            message=f"topic {self.topic} {state}",
        )

    def stop_mirror(self) -> None:
        stop_mirror(self.config, self.name)


def stop_mirror(config: Path, name: str) -> None:
    """Stop the detached mirror migration ``name`` started (by its pid)."""
    run = get_run(store_for(load_settings(config)), name)
    if run is None or not pid_alive(run.pid):
        return
    os.kill(run.pid, signal.SIGTERM)
    wait_for(lambda: not pid_alive(run.pid), timeout=120, message="mirror stopped")


def new_migration(
    clusters: Clusters,
    folder: Path,
    *,
    records: int = 3_000,
    partitions: int = 3,
    group: bool = True,
    extra_plan: dict[str, Any] | None = None,
) -> Migration:
    """A topic with ``records`` on the source, a stopped group that consumed a third of
    them, and a plan for both (written by `kmigrate plan new`, then adjusted)."""
    config = mirror_config(clusters.config_path, folder)
    topic, group_id, name = unique("mig"), unique("mig-g"), unique("m")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, partitions)
    fill(clusters.source, topic, records)
    if group:
        commit_group(clusters.source, topic, group_id, partitions, records // (3 * partitions))
    plan_path = folder / "plan.yaml"
    args = [
        "plan",
        "new",
        "--source",
        "source",
        "--target",
        "target",
        "--topics",
        topic,
        "--name",
        name,
        "-o",
        str(plan_path),
    ]
    if group:
        args += ["--groups", group_id]
    result = run_cli(*args, config=str(config))
    assert result.code == 0, result.stderr
    edit_plan(plan_path, {"quiet_period_s": 1.0, **(extra_plan or {})})
    return Migration(clusters, folder, config, topic, group_id, name, plan_path)


def edit_plan(path: Path, changes: dict[str, Any]) -> None:
    raw = yaml.safe_load(path.read_text())
    raw.update(changes)
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    load_plan(path)  # still a valid plan


def fill(cluster: ClusterConfig, topic: str, count: int, first: int = 0) -> None:
    produce(
        cluster,
        topic,
        [
            Record(f"k{i % 13}".encode(), f"v{i}".encode(), (("n", str(i).encode()),))
            for i in range(first, first + count)
        ],
    )


def commit_group(cluster: ClusterConfig, topic: str, group: str, partitions: int, at: int) -> None:
    """A group with commits at offset ``at`` in every partition and no members."""
    with ClusterAdmin(cluster) as admin:
        admin.alter_group_offsets(
            group, [TopicPartitionOffset(topic, p, at) for p in range(partitions)]
        )


def spawn_cli(m: Migration, *args: str) -> subprocess.Popen[bytes]:
    """A `kmigrate` command in its own process group, to kill -9 mid-step."""
    return subprocess.Popen(
        [sys.executable, "-m", "kmigrate", "--config", str(m.config), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )

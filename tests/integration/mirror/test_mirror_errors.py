"""`mirror start` refusals: one line, the right exit code, nothing written anywhere.

All of these are decided before Spark starts, so they are quick.
"""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from harness.helpers import CliResult, run_cli, unique
from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce
from kmigrate.model.links import Link
from kmigrate.model.records import Record
from kmigrate.model.runs import RunState
from kmigrate.store import store_for
from kmigrate.store.links import get_link, link_topics_of, save_link
from kmigrate.store.runs import begin_run, report_run
from tests.integration.conftest import Clusters
from tests.integration.mirror.harness import mirror_config


@pytest.fixture
def config(clusters: Clusters, tmp_path: Path) -> Path:
    return mirror_config(clusters.config_path, tmp_path)


def _start(config: Path, *args: str) -> CliResult:
    return run_cli("mirror", "start", *args, config=str(config), timeout=120)


def _one_line(result: CliResult) -> str:
    """The one error line (progress lines starting with '>' may precede it)."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert all(line.startswith(("> ", "error: ")) for line in lines), result.stderr
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    return errors[0]


def test_unknown_cluster_or_bad_regex_write_nothing(config: Path) -> None:
    result = _start(config, "--source", "source", "--target", "nowhere", "--topics", "x")
    assert result.code == 2
    assert "unknown cluster 'nowhere'" in _one_line(result)
    result = _start(config, "--source", "source", "--target", "target", "--topics", "a(")
    assert result.code == 2
    assert "'a(' is not a regex" in _one_line(result)
    assert not (config.parent / "kmigrate.db").exists(), "a refused start created the store"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # closed again: nothing answers there


def test_a_target_that_refuses_leaves_no_link_and_no_store(config: Path) -> None:
    """Both clusters are asked before the link is saved; `groups list` of a cluster that
    cannot be read is exit 3, never an empty list."""
    raw = yaml.safe_load(config.read_text())
    raw["clusters"]["gone"] = {"bootstrap_servers": f"127.0.0.1:{_closed_port()}", "timeout_s": 2}
    config.write_text(yaml.safe_dump(raw))
    name = unique("refused")
    result = _start(
        config, "--source", "source", "--target", "gone", "--topics", "x", "--link", name
    )
    assert result.code == 3 and "cannot reach cluster 'gone'" in _one_line(result)
    status = run_cli("mirror", "status", "--offline", "--json", config=str(config))
    assert status.code == 0 and json.loads(status.stdout) == {"links": []}, status.stderr
    assert not (config.parent / "kmigrate.db").exists(), "a refused start created the store"
    listed = run_cli("groups", "list", "--cluster", "gone", "--json", config=str(config))
    assert listed.code == 3 and listed.stdout == "", listed.stdout
    assert json.loads(listed.stderr)["exit"] == 3


def test_target_topic_with_records_is_not_adopted(clusters: Clusters, config: Path) -> None:
    prefix = unique("busy")
    with ClusterAdmin(clusters.source) as source, ClusterAdmin(clusters.target) as target:
        source.create_topic(f"{prefix}-a", 2)
        source.create_topic(f"{prefix}-b", 2)
        target.create_topic(f"{prefix}-b", 2)
    produce(clusters.target, f"{prefix}-b", [Record(b"k", b"theirs", (), None, 0, None)])
    result = _start(config, "--source", "source", "--target", "target", "--topics", f"{prefix}-.*")
    assert result.code == 5
    line = _one_line(result)
    assert f"target topic '{prefix}-b'" in line and "already holds records" in line
    with ClusterAdmin(clusters.target) as target:
        names = {t.name for t in target.list_topics()}
    assert f"{prefix}-a" not in names, "a refused start created another target topic"
    store = store_for(load_settings(config))
    assert link_topics_of(store, "source-to-target") == []


def test_target_topic_with_other_partition_count_is_refused(
    clusters: Clusters, config: Path
) -> None:
    topic = unique("shape")
    with ClusterAdmin(clusters.source) as source, ClusterAdmin(clusters.target) as target:
        source.create_topic(topic, 3)
        target.create_topic(topic, 2)
    result = _start(config, "--source", "source", "--target", "target", "--topics", topic)
    assert result.code == 5
    line = _one_line(result)
    assert "has 2 partition(s), source has 3" in line


@pytest.fixture
def live_pid() -> Iterator[int]:
    """A process that is alive, standing for a mirror already running the link."""
    process = subprocess.Popen(["sleep", "300"])
    yield process.pid
    process.kill()
    process.wait()


def test_second_mirror_on_a_running_link_is_refused(config: Path, live_pid: int) -> None:
    store = store_for(load_settings(config))
    save_link(store, Link("busy", "source", "target", "old-.*"))
    begin_run(store, "busy", live_pid, socket.gethostname(), None)
    report_run(store, "busy", live_pid, RunState.RUNNING)
    result = _start(
        config, "--source", "source", "--target", "target", "--topics", "new-.*", "--link", "busy"
    )
    assert result.code == 9
    assert f"already mirrored by process {live_pid}" in _one_line(result)
    link = get_link(store, "busy")
    assert link is not None and link.topics == "old-.*", "a refused start changed the link"

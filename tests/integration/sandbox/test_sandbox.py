"""`kmigrate sandbox up | status | down` with real brokers (a 3-broker cluster in racks,
grown and stopped by `down`, is the reassignment tests' sandbox)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.helpers import run_cli, unique
from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce, read_partition
from kmigrate.model.records import Record
from kmigrate.sandbox.process import is_ours
from kmigrate.sandbox.state import load_state
from tests.integration.conftest import Clusters


def _pids(directory: Path) -> dict[str, list[int | None]]:
    state = load_state(directory.resolve())
    return {n: [b.pid for b in c.brokers] for n, c in state.clusters.items()}


def _sandbox_dir(clusters: Clusters) -> Path:
    if clusters.sandbox_dir is None:
        pytest.fail("this test needs the session sandbox, not KMIGRATE_TEST_CONFIG clusters")
    return clusters.sandbox_dir


def test_status_json_reports_every_broker_alive(clusters: Clusters) -> None:
    directory = _sandbox_dir(clusters)
    result = run_cli("sandbox", "status", "--dir", str(directory), "--json")
    assert result.code == 0, result.stderr
    brokers = json.loads(result.stdout)["brokers"]
    assert {(b["cluster"], b["alive"], b["listening"], b["serving"]) for b in brokers} == {
        ("source", True, True, True),
        ("target", True, True, True),
    }


def test_the_brokers_start_from_the_class_archive_fetch_made(clusters: Clusters) -> None:
    """`sandbox fetch` (make jars; the session fixture too) made it; every broker of the
    session's sandbox maps it (AppCDS: about a second less CPU per start)."""
    directory = _sandbox_dir(clusters)
    archives = json.loads(run_cli("sandbox", "fetch", "--json").stdout)["class_archives"]
    assert len(archives) == 1 and Path(archives[0]).is_file(), archives
    for cluster, pids in _pids(directory).items():
        for pid in pids:
            maps = Path(f"/proc/{pid}/maps").read_text()
            assert archives[0] in maps, f"{cluster}'s broker (pid {pid}) maps no archive"


def test_up_on_a_live_sandbox_changes_nothing(clusters: Clusters) -> None:
    directory = _sandbox_dir(clusters)
    before = _pids(directory)
    yaml_before = (directory / "clusters.yaml").read_text()

    result = run_cli("sandbox", "up", "--dir", str(directory), "--json")

    assert result.code == 0, result.stderr
    assert "already running" in result.stderr
    assert _pids(directory) == before
    assert (directory / "clusters.yaml").read_text() == yaml_before


def test_down_never_signals_a_process_it_did_not_start(tmp_path: Path) -> None:
    """A fresh sandbox: it is stopped and its state file tampered with."""
    directory = tmp_path / "sb"
    assert run_cli("sandbox", "up", "--dir", str(directory), "--cluster", "solo").code == 0
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        # A pid recorded by the sandbox can be reused by an unrelated process later;
        # simulate that by pointing the state file at a stranger.
        state_file = directory / "sandbox.json"
        state = json.loads(state_file.read_text())
        real_pid = state["clusters"]["solo"]["brokers"][0]["pid"]
        state["clusters"]["solo"]["brokers"][0]["pid"] = stranger.pid
        state_file.write_text(json.dumps(state))

        assert run_cli("sandbox", "down", "--dir", str(directory), "--grace", "2").code == 0
        assert stranger.poll() is None, "down killed a process it did not start"
    finally:
        stranger.kill()
        stranger.wait()
        props = directory / "solo" / "broker-1" / "server.properties"
        if is_ours(real_pid, props):
            subprocess.run(["kill", "-9", str(real_pid)], check=False)


def test_kafka_3_9_is_selectable(tmp_path: Path) -> None:
    """A fresh sandbox: another Kafka release (other jars) than the shared one."""
    directory = tmp_path / "sb"
    up = run_cli(
        "sandbox",
        "up",
        "--dir",
        str(directory),
        "--cluster",
        "legacy",
        "--kafka-version",
        "3.9.1",
        timeout=600,
    )
    assert up.code == 0, up.stderr
    try:
        cluster = load_settings(directory / "clusters.yaml").cluster("legacy")
        with ClusterAdmin(cluster) as admin:
            topic = admin.create_topic(unique("old"), 2)
            assert admin.describe_cluster().brokers[0].rack == "rack-1"
        sent = produce(cluster, topic.name, [Record(b"k", b"v", partition=1)])
        assert read_partition(cluster, topic.name, 1, 0, 1) == sent
        assert "3.9.1" in (directory / "legacy" / "broker-1" / "broker.log").read_text()
    finally:
        run_cli("sandbox", "down", "--dir", str(directory), "--purge", "--yes")


def test_failed_start_reports_the_broker_log_and_leaves_nothing_running(tmp_path: Path) -> None:
    """A fresh sandbox: its start is made to fail."""
    import socket

    directory = tmp_path / "sb"
    assert run_cli("sandbox", "up", "--dir", str(directory), "--cluster", "busy").code == 0
    assert run_cli("sandbox", "down", "--dir", str(directory), "--grace", "10").code == 0
    port = load_state(directory.resolve()).clusters["busy"].brokers[0].port
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    squatter.bind(("127.0.0.1", port))
    squatter.listen()
    try:
        result = run_cli(
            "sandbox", "up", "--dir", str(directory), "--cluster", "busy", "--timeout", "60"
        )
    finally:
        squatter.close()
    assert result.code == 7, result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith("> ")]
    first, *log_lines = lines
    assert first.startswith("error: broker 1 of cluster 'busy'"), first
    assert "broker.log" in first
    assert any("Address already in use" in line for line in log_lines), log_lines
    status = run_cli("sandbox", "status", "--dir", str(directory), "--json")
    assert not any(b["alive"] for b in json.loads(status.stdout)["brokers"])
    # The state file says so too: the broker this `up` started is recorded as stopped.
    assert [b.pid for b in load_state(directory.resolve()).clusters["busy"].brokers] == [None]

"""`kmigrate serve` with a real mirror running between the session's clusters: the API
answers what `mirror status --json` prints, /metrics shows mirrored offsets and lag that
move while records flow (and parses with prometheus_client's parser), and the command
itself serves, refuses a busy port and refuses the network without a token."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from harness.helpers import run_cli, unique, wait_for
from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce
from kmigrate.model.records import Record
from kmigrate.net import free_ports
from kmigrate.serve.app import create_app
from tests.integration.conftest import Clusters
from tests.integration.mirror.harness import MirrorProcess, mirror_config, wait_caught_up

LINK = "served"


def _records(start: int, count: int) -> list[Record]:
    return [
        Record(None, f"v{i}".encode(), (), None, i % 2, None) for i in range(start, start + count)
    ]


@pytest.fixture(scope="module")
def mirrored(
    clusters: Clusters, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, str, MirrorProcess]]:
    folder = tmp_path_factory.mktemp("serve")
    config = mirror_config(clusters.config_path, folder)
    topic = unique("served")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, 2)
    produce(clusters.source, topic, _records(0, 200))
    mirror = MirrorProcess(
        config, LINK,
        ("--source", "source", "--target", "target", "--topics", topic, "--interval", "2s"),
        folder / "mirror.log",
    ).start()  # fmt: skip
    mirror.wait_running()
    yield config, topic, mirror
    assert mirror.stop() == 0, mirror.tail()


def _scrape(client: TestClient, topic: str) -> dict[str, dict[int, float]]:
    """metric name -> partition -> value, for ``topic``."""
    found: dict[str, dict[int, float]] = {}
    for family in text_string_to_metric_families(client.get("/metrics").text):
        for sample in family.samples:
            if sample.labels.get("topic") == topic and sample.labels.get("link") == LINK:
                found.setdefault(sample.name, {})[int(sample.labels["partition"])] = sample.value
    return found


def test_metrics_show_the_mirror_moving(
    mirrored: tuple[Path, str, MirrorProcess], clusters: Clusters
) -> None:
    config, topic, mirror = mirrored
    client = TestClient(create_app(load_settings(config)))
    wait_caught_up(mirror, clusters.source, [topic])
    before = _scrape(client, topic)
    assert sum(before["kmigrate_mirror_next_source_offset"].values()) == 200
    assert before["kmigrate_mirror_lag_records"] == {0: 0.0, 1: 0.0}

    produce(clusters.source, topic, _records(200, 300))
    wait_for(
        lambda: sum(_scrape(client, topic)["kmigrate_mirror_next_source_offset"].values()) == 500,
        timeout=120,
        message=f"the mirrored offsets in /metrics reach 500; {mirror.tail()}",
    )
    after = _scrape(client, topic)
    assert after["kmigrate_mirror_lag_records"] == {0: 0.0, 1: 0.0}
    assert sum(after["kmigrate_mirror_records_mirrored"].values()) == 500
    batch = [
        s.value
        for f in text_string_to_metric_families(client.get("/metrics").text)
        for s in f.samples
        if s.name == "kmigrate_mirror_batch_duration_seconds" and s.labels["link"] == LINK
    ]
    assert len(batch) == 1 and batch[0] > 0, batch


def test_the_api_answers_what_the_cli_prints(mirrored: tuple[Path, str, MirrorProcess]) -> None:
    config, topic, _ = mirrored
    client = TestClient(create_app(load_settings(config)))
    api = client.get(f"/api/links/{LINK}").json()
    cli = run_cli("mirror", "status", "--link", LINK, "--json", config=str(config))
    assert cli.code == 0, cli.stderr
    printed = json.loads(cli.stdout)["links"][0]
    assert api.keys() == printed.keys()
    for key in ("link", "source", "target", "state", "topics"):
        assert api[key] == printed[key], key
    assert [(p["topic"], p["partition"]) for p in api["partitions"]] == [(topic, 0), (topic, 1)]
    assert client.get("/api/links").json()["links"][0]["link"] == LINK


def test_serve_refuses_the_network_without_a_token_and_a_busy_port(tmp_path: Path) -> None:
    refused = run_cli("serve", "--listen", "0.0.0.0:8080")
    assert refused.code == 2
    assert refused.stderr.strip().startswith("error: serving on 0.0.0.0 (not loopback) needs")
    assert "Traceback" not in refused.stderr

    (port,) = free_ports(1)
    config = tmp_path / "kmigrate.yaml"
    config.write_text(
        "clusters: {a: {bootstrap_servers: '127.0.0.1:1'}}\n"
        f"store: {{url: 'sqlite:///{tmp_path / 'k.db'}'}}\n"
    )
    first = subprocess.Popen(
        [sys.executable, "-m", "kmigrate", "--config", str(config), "serve", "--listen",
         f"127.0.0.1:{port}", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert first.stdout is not None
        address = json.loads(first.stdout.readline())  # --json: where it listens, one line
        assert address["listening"] == f"http://127.0.0.1:{port}" and address["port"] == port
        wait_for(lambda: _healthy(port) or first.poll() is not None, timeout=60,
                 message="kmigrate serve answering /healthz")  # fmt: skip
        assert first.poll() is None, first.stderr.read() if first.stderr else ""
        busy = run_cli("serve", "--listen", f"127.0.0.1:{port}", config=str(config))
        assert busy.code == 2
        assert busy.stderr.strip().startswith(f"error: cannot listen on 127.0.0.1:{port}")
    finally:
        first.terminate()
        first.wait(30)


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False

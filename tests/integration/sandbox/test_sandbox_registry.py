"""`kmigrate sandbox up --schema-registry`: each cluster its own real Schema Registry
(AxonOps, memory storage), named in clusters.yaml, restarted empty by `up` when it
died, stopped by `down` and by a failed `up`."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.helpers import unique
from kmigrate.config import load_settings
from kmigrate.errors import SandboxError
from kmigrate.model.schemas import Schema, SchemaVersion
from kmigrate.sandbox import manager, schema_registry
from kmigrate.sandbox.process import is_running, stop_processes
from kmigrate.sandbox.state import RegistryNode, load_state
from kmigrate.schema_registry.client import SchemaRegistry
from tests.integration.cli_contract.harness import run_in
from tests.integration.conftest import Clusters

SCHEMA = json.dumps({"type": "record", "name": "Row", "fields": [{"name": "id", "type": "long"}]})


def _call(url: str, body: object = None) -> object:
    """One request to a registry (a POST when there is a body); its JSON answer."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/vnd.schemaregistry.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


def _register(registry: str, subject: str) -> None:
    answer = _call(f"{registry}/subjects/{subject}/versions", {"schema": SCHEMA})
    assert isinstance(answer, dict) and "id" in answer, answer


def _subjects(registry: str) -> list[str]:
    answer = _call(f"{registry}/subjects")
    # AxonOps v0.2.1 answers null, where Confluent's registry answers [], when it holds none.
    assert answer is None or isinstance(answer, list), answer
    return answer or []


def test_each_cluster_has_its_own_registry(clusters: Clusters) -> None:
    """The session's clusters: each names its registry; what one holds, the other does not."""
    source, target = clusters.source.schema_registry, clusters.target.schema_registry
    assert source is not None and target is not None, "the test clusters have no registries"
    assert source.url != target.url
    subject = unique("sr-own") + "-value"

    # Registered on the target: other tests' migrations copy the source's registry to the
    # target's at any moment, never the other way. Under an id far above any the source
    # gives out, so that no later copy finds it conflicting with one of the source's.
    registry = SchemaRegistry(clusters.target)
    registry.set_mode("IMPORT", subject)
    registry.register(SchemaVersion(subject, 1, 2_000_000_000, Schema("AVRO", SCHEMA)))
    registry.set_mode(None, subject)

    assert subject in _subjects(target.url)
    assert subject not in _subjects(source.url)


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Path]:
    """A sandbox folder of its own (one 1-broker cluster `solo`), purged at the end."""
    yield tmp_path / "sb"
    if (tmp_path / "sb").exists():
        manager.down(tmp_path / "sb", purge=True, grace=5)


def _registry(sandbox: Path) -> RegistryNode:
    node = load_state(sandbox.resolve()).clusters["solo"].schema_registry
    assert node is not None, "sandbox.json records no registry for solo"
    return node


def _kill(pid: int | None) -> None:
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while is_running(pid):
        if time.monotonic() > deadline:
            pytest.fail(f"registry process {pid} still runs 10 s after SIGKILL")
        time.sleep(0.05)


def test_up_restarts_a_killed_registry_empty_and_down_stops_it(sandbox: Path) -> None:
    up = ["sandbox", "up", "--dir", str(sandbox), "--cluster", "solo"]
    ran = run_in(sandbox.parent, [*up, "--schema-registry", "--json"])
    assert ran.code == 0, ran.stderr
    url = json.loads(ran.stdout)["clusters"]["solo"]["schema_registry"]
    named = load_settings(sandbox / "clusters.yaml").cluster("solo").schema_registry
    assert named is not None and named.url == url
    status = run_in(sandbox.parent, ["sandbox", "status", "--dir", str(sandbox), "--json"])
    assert status.code == 0, status.stderr
    rows = json.loads(status.stdout)["schema_registries"]
    assert [(r["cluster"], r["url"], r["serving"]) for r in rows] == [("solo", url, True)]
    _register(url, "kept-value")
    first = _registry(sandbox)

    # Alive: `up` (with the flag or without) leaves it as it is, schemas included.
    ran = run_in(sandbox.parent, up)
    assert ran.code == 0, ran.stderr
    assert "Schema Registry already running" in ran.stderr
    assert _registry(sandbox) == first
    assert _subjects(url) == ["kept-value"]

    # Killed: `up` starts it again on its port, empty, and says so.
    _kill(first.pid)
    ran = run_in(sandbox.parent, up)
    assert ran.code == 0, ran.stderr
    assert "it starts empty" in ran.stderr
    second = _registry(sandbox)
    assert second.port == first.port and second.pid != first.pid
    assert _subjects(url) == []

    ran = run_in(sandbox.parent, ["sandbox", "down", "--dir", str(sandbox), "--grace", "5"])
    assert ran.code == 0, ran.stderr
    assert not is_running(second.pid), "down left the registry running"
    assert _registry(sandbox).pid is None


def test_a_failed_up_stops_the_registry_it_started(sandbox: Path) -> None:
    """No broker answers within 1 ms: this `up` fails after starting broker and registry."""
    up = ["sandbox", "up", "--dir", str(sandbox), "--cluster", "solo", "--schema-registry"]
    ran = run_in(sandbox.parent, [*up, "--timeout", "0.001s"])
    assert ran.code == 7, ran.stderr
    assert "starting a Schema Registry at" in ran.stderr
    node = _registry(sandbox)
    assert node.pid is None, "a failed up left its registry recorded as running"
    assert not schema_registry.answers(node.port)


def test_a_registry_that_cannot_start_fails_with_its_log(tmp_path: Path) -> None:
    """No Kafka: the registry alone, on a port another process holds."""
    binary = schema_registry.ensure_registry()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        pid = schema_registry.start(binary, tmp_path, port)
        try:
            with pytest.raises(SandboxError, match="exited during start") as failed:
                schema_registry.wait_ready("busy", pid, port, tmp_path, timeout=10)
        finally:
            stop_processes({pid: schema_registry.config_path(tmp_path)}, grace=2)
    assert "address already in use" in (failed.value.detail or "")


def test_a_failed_build_shows_gos_last_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "module"
    module.mkdir()
    (module / "go.mod").write_text(
        "module broken\n\ngo 1.26.0\n\nrequire github.com/axonops/axonops-schema-registry v9.9.9\n"
        "this is not go.mod syntax\n"
    )
    (module / "go.sum").write_text("")
    monkeypatch.setattr(schema_registry, "MODULE_DIR", module)
    monkeypatch.setenv("KMIGRATE_CACHE", str(tmp_path / "cache"))

    with pytest.raises(SandboxError, match=r"needs Go >= 1\.26") as failed:
        schema_registry.ensure_registry()

    assert "go.mod" in (failed.value.detail or "")
    built = tmp_path / "cache" / "schema-registry" / "v9.9.9"
    assert list(built.iterdir()) == [], "a failed build left a file in the cache"

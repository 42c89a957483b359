"""Guarded migration steps through `kmigrate serve`, on a real migration (topic in sync,
group still on the source): a refused promote answers the CLI's reason and kind with
409 and changes nothing; a rollback runs as a job and leaves the topic PLANNED, as
`kmigrate migrate rollback` does; both are in the migration's audit log."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kmigrate.config import load_settings
from kmigrate.serve.app import create_app
from tests.helpers import wait_for
from tests.integration.conftest import Clusters
from tests.integration.migration.harness import Migration, new_migration


@pytest.fixture(scope="module")
def started(clusters: Clusters, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Migration]:
    m = new_migration(clusters, tmp_path_factory.mktemp("serve-steps"), records=600)
    m.ok("migrate", "start", str(m.plan))
    m.wait_topic("IN_SYNC")
    yield m
    m.stop_mirror()


def _finished(client: TestClient, answer: Any) -> dict[str, Any]:
    body: dict[str, Any] = answer.json()
    if answer.status_code != 202:
        return body
    wait_for(
        lambda: client.get(f"/api/jobs/{body['job']}").json()["state"] != "running",
        timeout=120,
        message=f"job {body['job']} finished",
    )
    finished: dict[str, Any] = client.get(f"/api/jobs/{body['job']}").json()
    return finished


def test_promote_refused_then_rollback_done(started: Migration) -> None:
    client = TestClient(create_app(load_settings(started.config)))
    base = f"/api/migrations/{started.name}"
    before = started.states()

    refused = client.post(f"{base}/steps/promote", json={"topics": [started.topic]})
    assert refused.status_code == 409, refused.text
    body = refused.json()
    assert body["kind"] == "conflict" and body["state"] == "refused"
    assert f"still read on the source by group(s) {started.group}" in body["error"]
    assert started.states() == before

    cli = started.cli("migrate", "promote", started.topic)
    assert body["error"] in cli.stderr  # the same reason, word for word

    rolled = _finished(
        client, client.post(f"{base}/steps/rollback", json={"topics": [started.topic]})
    )
    assert rolled["state"] == "done", rolled
    assert rolled["result"]["rolled_back"] == [started.topic]
    assert started.topic_state() == "PLANNED"
    steps = [(e["action"], e["outcome"]) for e in client.get(f"{base}/history").json()["events"]]
    assert ("promote", "refused") in steps and ("rollback", "done") in steps

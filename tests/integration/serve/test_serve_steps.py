"""Guarded migration steps through `kmigrate serve`, on a real migration started by
POSTing its plan (topic in sync, group still on the source): the group's translation
and its dry-run move answer what the CLI prints and commit nothing; a refused promote
answers the CLI's reason and kind with 409 and changes nothing; a rollback runs as a
job and leaves the topic PLANNED, as `kmigrate migrate rollback` does; both are in the
migration's audit log."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from harness.helpers import wait_for
from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.serve.app import create_app
from tests.integration.conftest import Clusters
from tests.integration.migration.harness import Migration, new_migration


@pytest.fixture(scope="module")
def started(clusters: Clusters, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Migration]:
    m = new_migration(clusters, tmp_path_factory.mktemp("serve-steps"), records=600)
    with TestClient(create_app(load_settings(m.config))) as client:
        answer = client.post("/api/migrations", json={"plan": m.plan.read_text()})
        assert answer.status_code in (200, 202), answer.text
        done = _finished(client, answer)
        assert done["state"] == "done", done
        assert done["result"]["started"] == [m.topic]
        again = _finished(client, client.post("/api/migrations", json={"plan": m.plan.read_text()}))
        assert again["state"] == "done" and again["result"]["started"] == []  # safe to repeat
    m.wait_topic("IN_SYNC")
    yield m
    m.stop_mirror()


def test_group_translation_and_dry_run_answer_what_the_cli_prints(started: Migration) -> None:
    m = started
    with TestClient(create_app(load_settings(m.config))) as client:
        translated = client.get(f"/api/links/{m.name}/groups/{m.group}")
        assert translated.status_code == 200, translated.text
        cli = json.loads(m.ok("groups", "translate", "--link", m.name, "--group", m.group,
                              "--json").stdout)  # fmt: skip
        assert translated.json() == cli
        assert {p["exact"] for p in cli["partitions"]} == {True}

        before = m.states()
        dry = _finished(client, client.post(f"/api/links/{m.name}/groups/{m.group}/migrate",
                                            json={}))  # fmt: skip
        assert dry["state"] == "done" and dry["result"]["outcome"] == "dry-run", dry
        with ClusterAdmin(m.clusters.target) as target:
            assert target.committed_offsets(m.group) == []  # nothing committed
        assert m.states() == before


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

    cli = started.cli("migrate", "promote", "--topics", started.topic)
    assert body["error"] in cli.stderr  # the same reason, word for word

    # Without "yes" a rollback only shows what it would delete (as the CLI without --yes).
    shown = _finished(client, client.post(f"{base}/steps/rollback", json={"topics": started.topic}))
    assert shown["state"] == "done", shown
    assert shown["result"]["outcome"] == "dry-run" and shown["result"]["rolled_back"] == []
    assert shown["result"]["would_roll_back"] == [started.topic]
    assert started.states() == before

    rolled = _finished(
        client,
        client.post(f"{base}/steps/rollback", json={"topics": started.topic, "yes": True}),
    )
    assert rolled["state"] == "done", (rolled.get("error"), rolled.get("lines"))
    assert rolled["result"]["rolled_back"] == [started.topic]
    assert started.topic_state() == "PLANNED"
    steps = [(e["action"], e["outcome"]) for e in client.get(f"{base}/history").json()["events"]]
    assert ("promote", "refused") in steps and ("rollback", "done") in steps

"""Bad requests to the REST API of `kmigrate serve`, in-process (no broker answers):
each is refused with one JSON object `{"kind", "error"}` (one line naming what to fix),
the HTTP status of its kind (404 a named thing that does not exist, 422 a bad request,
401/403 who may ask, 405 a method), no secret in the answer, and nothing written to the
store (its rows compared before and after)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from kmigrate.config import load_settings
from kmigrate.serve.app import create_app

SECRET = "api-contract-secret"
TOKEN = "api-contract-token-0123456789"
PLAN = "name: m\nsource: a\ntarget: b\ntopics: [{name: orders, partitions: 1}]\n"


@dataclass(frozen=True)
class Bad:
    method: str
    path: str
    status: int
    says: str
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    token: bool = False  # the server requires a token (the request carries none)

    @property
    def id(self) -> str:
        return f"{self.method} {self.path} {str(self.body)[:30]}"


def bad(method: str, path: str, status: int, says: str, **kwargs: Any) -> Bad:
    return Bad(method, path, status, says, **kwargs)


STEP = "/api/migrations/nope/steps"
CASES = [
    # a named thing that does not exist: 404
    bad("GET", "/api/links/nope", 404, "no link named 'nope'"),
    bad("GET", "/api/links/nope/groups/g", 404, "no link named 'nope'"),
    bad("POST", "/api/links/nope/groups/g/migrate", 404, "no link named 'nope'", body={}),
    bad("POST", "/api/links/nope/verify", 404, "no link named 'nope'", body={}),
    bad("GET", "/api/migrations/nope", 404, "no migration named 'nope'"),
    bad("GET", "/api/migrations/nope/history", 404, "no migration named 'nope'"),
    bad("POST", f"{STEP}/promote", 404, "no migration named 'nope'", body={"topics": ["t"]}),
    bad("POST", f"{STEP}/start", 404, "no migration named 'nope'", body={}),
    bad("GET", "/api/jobs/999", 404, "no job 999"),
    bad("GET", "/api/verify/999/report.html", 404, "no verify report from job 999"),
    bad("GET", "/api/nosuch", 404, "no such path /api/nosuch"),
    # a bad request: 422, checked before anything else
    bad("POST", f"{STEP}/launch", 422, "unknown step 'launch'", body={"topics": ["t"]}),
    bad("POST", f"{STEP}/promote", 422, "promote needs topics", body={}),
    bad("POST", f"{STEP}/consumers", 422, "consumers needs groups", body={"topics": ["t"]}),
    bad("POST", f"{STEP}/promote", 422, "not a regex", body={"topics": "("}),
    bad("POST", f"{STEP}/promote", 422, "force", body={"topics": ["t"], "force": True}),
    bad("POST", f"{STEP}/promote", 422, "timeout", body={"topics": "t", "timeout": "0s"}),
    bad("POST", f"{STEP}/promote", 422, "timeout", body={"topics": ["t"], "timeout_s": 0}),
    bad("POST", f"{STEP}/promote", 422, "'soon' is not a duration",
        body={"topics": "t", "quiet_period": "soon"}),
    bad("POST", f"{STEP}/consumers", 422, "wait", body={"groups": "g", "wait": -5}),
    bad("POST", "/api/links/nope/groups/g/migrate", 422, "wait", body={"wait": "1d"}),
    bad("POST", "/api/links/nope/groups/g/migrate", 422, "yes", body={"yes": "maybe"}),
    bad("POST", "/api/links/nope/groups/g/migrate", 422, "yes", body={"apply": "maybe"}),
    bad("POST", "/api/links/nope/verify", 422, "regex", body={"regex": "x"}),
    bad("POST", "/api/migrations", 422, "plan: Field required", body={}),
    bad("POST", "/api/migrations", 422, "plan", body={"plan": ""}),
    bad("POST", "/api/migrations", 422, "bad YAML", body={"plan": "name: [m"}),
    bad("POST", "/api/migrations", 422, "a plan is a mapping", body={"plan": "- orders"}),
    bad("POST", "/api/migrations", 422, "unknown cluster 'nope'",
        body={"plan": PLAN.replace("target: b", "target: nope")}),
    bad("POST", "/api/migrations", 422, "not a valid kafka topic name",
        body={"plan": PLAN.replace("orders", "'no spaces'")}),
    bad("POST", "/api/migrations", 422, "source and target are the same",
        body={"plan": PLAN.replace("target: b", "target: a")}),
    bad("POST", "/api/migrations", 422, "the request body is not JSON", body="not json"),
    bad("GET", "/api/jobs/abc", 422, "job_id"),
    bad("GET", "/api/migrations/nope/history?last=0", 422, "last"),
    bad("GET", "/api/links?offline=maybe", 422, "offline"),
    bad("GET", "/api/reassignments/nope", 422, "unknown cluster 'nope'"),
    bad("GET", "/api/zk-moves/nope", 422, "unknown cluster 'nope'"),
    bad("GET", "/api/kraft/nope", 422, "unknown cluster 'nope'"),
    bad("GET", "/api/gateway/migrations", 422, "no gateway configured"),
    # a method the path does not take
    bad("DELETE", "/api/migrations", 405, "DELETE is not allowed"),
    # who may ask
    bad("GET", "/api/links", 401, "a bearer token is required", token=True),
    bad("POST", "/api/migrations", 401, "a bearer token is required", body={"plan": PLAN},
        token=True, headers={"Authorization": "Bearer not-the-token-at-all"}),
    bad("POST", "/api/migrations", 403, "requests from https://evil.example are refused",
        body={"plan": PLAN}, headers={"Origin": "https://evil.example"}),
]  # fmt: skip


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "clusters.yaml"
    path.write_text(yaml.safe_dump({
        "clusters": {
            "a": {"bootstrap_servers": "127.0.0.1:1", "timeout_s": 2, "properties": {
                "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                "sasl.username": "kmigrate", "sasl.password": SECRET}},
            "b": {"bootstrap_servers": "127.0.0.1:2", "timeout_s": 2},
        },
        "store": {"url": f"sqlite:///{tmp_path / 'kmigrate.db'}"},
    }))  # fmt: skip
    return path


def rows(folder: Path) -> list[str]:
    """Everything the store holds (read through its own connection), or nothing."""
    db = folder / "kmigrate.db"
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        return list(conn.iterdump())


def send(client: TestClient, c: Bad) -> Any:
    headers = dict(c.headers)
    if isinstance(c.body, str):
        headers["Content-Type"] = "application/json"
        return client.request(c.method, c.path, content=c.body, headers=headers)
    if c.body is None:
        return client.request(c.method, c.path, headers=headers)
    return client.request(c.method, c.path, json=c.body, headers=headers)


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_bad_request(c: Bad, config: Path) -> None:
    app = create_app(load_settings(config), TOKEN if c.token else None)
    with TestClient(app) as client:
        before = rows(config.parent)
        answer = send(client, c)
        assert answer.status_code == c.status, answer.text
        body = answer.json()
        assert isinstance(body["kind"], str) and body["kind"], body
        message = body["error"]
        assert isinstance(message, str) and "\n" not in message
        assert c.says in message, f"{c.says!r} not in {message!r}"
        assert SECRET not in answer.text and TOKEN not in answer.text
        assert "Traceback" not in answer.text
        assert rows(config.parent) == before, "the request changed the store"


def test_at_least_20_bad_requests() -> None:
    assert len(CASES) >= 20

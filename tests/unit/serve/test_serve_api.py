"""The `kmigrate serve` API over a real (SQLite) metadata store and clusters.yaml, no
broker needed: what it lists, how it refuses, the token, and that /metrics parses and
never shows a secret. The API's answers while a mirror runs are tested in
tests/integration/serve."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from kmigrate.config import load_settings
from kmigrate.ensemble_move.move import ensemble_move
from kmigrate.ensemble_move.plan import plan_move
from kmigrate.serve.app import create_app
from kmigrate.store import reassignments as stored_moves
from kmigrate.store import store_for
from tests.unit.ensemble_move.test_zk_plan import _kafka, _view

SECRET = "pa55-w0rd-never-shown"
PLAN_TO_NOWHERE = "name: m\nsource: a\ntarget: zz\ntopics: [{name: t, partitions: 1}]\n"
TOKEN = "t0ken-t0ken-t0ken-t0ken"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "clusters.yaml"
    path.write_text(yaml.safe_dump({
        "clusters": {
            "a": {"bootstrap_servers": "127.0.0.1:1", "properties": {
                "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                "sasl.username": "kmigrate", "sasl.password": SECRET}},
            "b": {"bootstrap_servers": "127.0.0.1:2"},
        },
        "store": {"url": f"sqlite:///{tmp_path / 'kmigrate.db'}"},
    }))  # fmt: skip
    return path


def _client(config: Path, token: str | None = None) -> TestClient:
    return TestClient(create_app(load_settings(config), token))


def test_clusters_are_listed_with_every_secret_redacted(config: Path) -> None:
    answer = _client(config).get("/api/clusters")
    assert answer.status_code == 200
    clusters = {c["name"]: c for c in answer.json()["clusters"]}
    assert clusters["a"]["bootstrap_servers"] == "127.0.0.1:1"
    assert clusters["a"]["properties"]["sasl.username"] == "kmigrate"
    assert SECRET not in answer.text


def test_empty_store_lists_nothing(config: Path) -> None:
    client = _client(config)
    assert client.get("/api/links").json() == {"links": []}
    assert client.get("/api/migrations").json() == {"migrations": []}


@pytest.mark.parametrize(
    ("path", "says"),
    [("/api/links/nope", "no link named 'nope'"),
     ("/api/migrations/nope", "nope"),
     ("/api/migrations/nope/history", "nope"),
     ("/api/reassignments/a", "cluster 'a' has no reassignment applied"),
     ("/api/zk-moves/b", "cluster 'b' has no ZooKeeper move"),
     ("/api/kraft/b", "cluster 'b' has no migration to KRaft")],
)  # fmt: skip
def test_unknown_names_are_a_404_with_the_clis_reason(config: Path, path: str, says: str) -> None:
    answer = _client(config).get(path)
    assert answer.status_code == 404
    body = answer.json()
    assert body["kind"] == "not-found" and says in body["error"]
    assert "\n" not in body["error"]


def test_a_token_guards_every_call_but_the_health_check(config: Path) -> None:
    client = _client(config, TOKEN)
    refused = client.get("/api/clusters")
    assert refused.status_code == 401 and refused.json()["kind"] == "unauthorized"
    assert client.get("/metrics").status_code == 401
    assert client.get("/api/clusters", headers={"Authorization": "Bearer wrong"}).status_code == 401
    ok = client.get("/api/clusters", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200
    assert client.get("/healthz").json() == {"status": "ok"}
    assert TOKEN not in refused.text


def test_metrics_parse_and_count_refusals_by_kind(config: Path) -> None:
    client = _client(config)
    client.get("/api/links/nope")
    text = client.get("/metrics").text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    refusals = {s.labels["kind"]: s.value for s in families["kmigrate_api_refusals"].samples
                if s.name == "kmigrate_api_refusals_total"}  # fmt: skip
    assert refusals == {"not-found": 1.0}
    assert "kmigrate_mirror_lag_records" in families
    assert SECRET not in text


def test_an_unknown_cluster_is_named_as_such(config: Path) -> None:
    answer = _client(config).get("/api/reassignments/nope")
    assert answer.status_code == 422
    assert answer.json()["kind"] == "unknown-cluster" and "nope" in answer.json()["error"]


def test_a_reassignment_and_a_zookeeper_move_read_from_the_store(config: Path) -> None:
    settings = load_settings(config)
    store = store_for(settings)
    stored_moves.begin(store, "a", "{}", [("t", 0), ("t", 1)], 1_000_000, 10)
    stored_moves.set_states(store, "a", [("t", 0)], "done")
    source, target = _view("old", [1, 2, 3]), _view("new", [4, 5, 6])
    plan = plan_move(source, target, _kafka(source), "/kafka")
    ensemble_move(store, "b").begin(plan.to_yaml("p.yaml"))
    ensemble_move(store, "b").record("join", "joined server 4", "ok")
    client = _client(config)
    moving = client.get("/api/reassignments/a").json()
    assert moving["state"] == "running"
    assert moving["partitions"] == {"done": 1, "pending": 1}
    move = client.get("/api/zk-moves/b").json()
    assert [(e["phase"], e["step"], e["outcome"]) for e in move["history"]] == [
        ("join", "joined server 4", "ok")
    ]


@pytest.mark.parametrize(
    ("path", "body", "status", "says"),
    [("/api/migrations/nope/steps/promote", {"topics": ["t"]}, 404, "nope"),
     ("/api/migrations/nope/steps/launch", {"topics": ["t"]}, 422, "unknown step 'launch'"),
     ("/api/migrations/nope/steps/promote", {}, 422, "promote needs topics"),
     ("/api/migrations/nope/steps/consumers", {"topics": ["t"]}, 422, "consumers needs groups"),
     ("/api/migrations/nope/steps/promote", {"topics": ["t"], "force": True}, 422, "force"),
     ("/api/migrations/nope/steps/promote", {"topics": "("}, 422, "not a regex"),
     ("/api/migrations/nope/steps/promote", {"topics": "t"}, 404, "nope")],
)  # fmt: skip
def test_a_malformed_or_impossible_step_is_refused_at_once(
    config: Path, path: str, body: dict, status: int, says: str
) -> None:
    answer = _client(config).post(path, json=body)
    assert answer.status_code == status, answer.text
    assert says in answer.json()["error"] and answer.json()["kind"]


def test_a_step_posted_from_another_site_is_refused(config: Path) -> None:
    answer = _client(config).post(
        "/api/migrations/nope/steps/promote",
        json={"topics": ["t"]},
        headers={"Origin": "https://evil.example"},
    )
    assert answer.status_code == 403 and answer.json()["kind"] == "cross-origin"
    same = _client(config).post(
        "/api/migrations/nope/steps/promote",
        json={"topics": ["t"]},
        headers={"Origin": "http://testserver"},
    )
    assert same.status_code == 404  # past the origin check, refused for what it names


def test_an_unknown_job_is_a_404(config: Path) -> None:
    answer = _client(config).get("/api/jobs/999")
    assert answer.status_code == 404 and answer.json()["kind"] == "not-found"


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "says"),
    [("post", "/api/migrations", {"plan": "name: [unclosed"}, 422, "bad YAML at line 1"),
     ("post", "/api/migrations", {"plan": PLAN_TO_NOWHERE}, 422, "'zz'"),
     ("post", "/api/migrations", {}, 422, "plan"),
     ("post", "/api/migrations/nope/steps/start", {}, 404, "nope"),
     ("get", "/api/links/nope/groups/g", None, 404, "no link named 'nope'"),
     ("post", "/api/links/nope/groups/g/migrate", {"apply": True}, 404, "no link named 'nope'"),
     ("post", "/api/links/nope/verify", {}, 404, "no link named 'nope'"),
     ("get", "/api/verify/7/report.html", None, 404, "no verify report from job 7"),
     ("get", "/api/gateway/migrations", None, 422, "no gateway configured")],
)  # fmt: skip
def test_each_action_refuses_what_it_cannot_do_and_changes_nothing(
    config: Path, method: str, path: str, body: dict | None, status: int, says: str
) -> None:
    client = _client(config)
    answer = client.request(method.upper(), path, json=body)
    assert answer.status_code == status, answer.text
    assert says in answer.json()["error"] and answer.json()["kind"]
    assert client.get("/api/migrations").json() == {"migrations": []}
    assert client.get("/api/links").json() == {"links": []}


def test_the_console_pages_render_and_refuse_in_html(config: Path) -> None:
    client = _client(config)
    overview = client.get("/")
    assert overview.status_code == 200 and "No migration yet" in overview.text
    assert '<script src="/static/vendor/htmx.min.js">' in overview.text
    missing = client.get("/migrations/nope")
    assert missing.status_code == 404 and "text/html" in missing.headers["content-type"]
    assert "no migration named &#39;nope&#39;" in missing.text
    step = client.post("/console/migrations/nope/steps/promote?topic=t")
    assert step.status_code == 200  # htmx swaps only 2xx: the refusal is the fragment
    assert 'class="refusal"' in step.text and "Nothing changed (not-found)" in step.text
    assert SECRET not in overview.text + missing.text + step.text


def test_docs_and_static_files_need_no_network(config: Path) -> None:
    client = _client(config)
    docs = client.get("/docs")
    assert docs.status_code == 200
    assert "/static/vendor/swagger-ui-bundle.js" in docs.text
    assert "https://" not in docs.text and "http://" not in docs.text  # no CDN
    for path in ("swagger-ui-bundle.js", "swagger-ui.css", "htmx.min.js", "htmx-ext-sse.min.js"):
        assert client.get(f"/static/vendor/{path}").status_code == 200, path
    assert client.get("/openapi.json").json()["info"]["title"] == "kmigrate"


def test_with_a_token_the_console_signs_in_and_posts_only_from_its_pages(config: Path) -> None:
    client = _client(config, TOKEN)
    page = client.get("/migrations/x", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"] == "/login?next=/migrations/x"
    assert client.get("/static/console.css").status_code == 200  # the sign-in page's style
    assert client.get("/events/migrations/x").status_code == 401  # scripts get a 401

    wrong = client.post("/login", content="token=nope&next=/", follow_redirects=False,
                        headers={"Origin": "http://testserver"})  # fmt: skip
    assert wrong.headers["location"].startswith("/login?failed=true")
    assert "set-cookie" not in wrong.headers
    evil = client.post("/login", content=f"token={TOKEN}&next=//evil.example",
                       follow_redirects=False, headers={"Origin": "http://testserver"})  # fmt: skip
    assert evil.status_code == 303 and evil.headers["location"] == "/"  # no open redirect
    cookie = evil.cookies["kmigrate_session"]
    assert TOKEN not in cookie and "HttpOnly" in evil.headers["set-cookie"]

    def signed(value: str) -> TestClient:
        client.cookies.clear()
        client.cookies.set("kmigrate_session", value)
        return client

    assert signed(cookie).get("/").status_code == 200
    assert signed("forged").get("/", follow_redirects=False).status_code == 303
    step = "/console/migrations/nope/steps/promote?topic=t"
    bare = signed(cookie).post(step)
    assert bare.status_code == 403 and bare.json()["kind"] == "cross-origin"
    other = signed(cookie).post(step, headers={"Origin": "https://evil.example"})
    assert other.status_code == 403
    own = signed(cookie).post(step, headers={"Origin": "http://testserver"})
    assert own.status_code == 200 and "not-found" in own.text
    client.cookies.clear()
    api = client.post("/api/migrations/nope/steps/promote", json={"topics": ["t"]},
                      headers={"Authorization": f"Bearer {TOKEN}"})  # fmt: skip
    assert api.status_code == 404  # a script with the token needs no origin

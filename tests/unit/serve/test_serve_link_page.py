"""The console's link page over a real (SQLite) store, no broker: a link of many topics
is shown per topic, a page at a time, the topic with a gap first, and one topic's
partitions on demand; the API's `topics` filter is `mirror status --topics`. (The
link's clusters are not in clusters.yaml, so the page shows the store's view.)"""

from __future__ import annotations

import re

import pytest
import yaml
from fastapi.testclient import TestClient

from kmigrate.config import load_settings
from kmigrate.model.links import Gap, Link
from kmigrate.serve.app import create_app
from kmigrate.store import store_for
from kmigrate.store.links import save_link
from kmigrate.store.offsets import record_gap
from tests.estate import add_topics

TOPICS = 60
GAPPED = "t037"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    folder = tmp_path_factory.mktemp("link-page")
    config = folder / "clusters.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "clusters": {"a": {"bootstrap_servers": "127.0.0.1:1"}},
                "store": {"url": f"sqlite:///{folder / 'kmigrate.db'}"},
            }
        )
    )
    settings = load_settings(config)
    store = store_for(settings)
    save_link(store, Link("big", "old", "new", "t.*"))
    add_topics(store, "big", {f"t{i:03d}": 2 for i in range(TOPICS)})
    record_gap(store, "big", Gap(GAPPED, 1, 5, 9, "deleted by retention"))
    return TestClient(create_app(settings))


def _topic_rows(html: str) -> list[str]:
    return re.findall(r'<tr data-topic="([^"]+)"', html)


def test_the_first_page_lists_fifty_topics_the_gapped_one_first(client: TestClient) -> None:
    html = client.get("/links/big").text
    rows = _topic_rows(html)
    assert len(rows) == 50 and rows[0] == GAPPED
    assert "60 topic(s), 120 partition(s)" in html
    assert "page 1 of 2" in html and 'href="/links/big?page=2"' in html
    assert 'id="partitions"' not in html  # no partition shown until asked
    assert 'sse-connect="/events/links/big?page=1"' in html


def test_the_second_page_has_the_rest(client: TestClient) -> None:
    html = client.get("/links/big", params={"page": 2}).text
    first_page = _topic_rows(client.get("/links/big").text)
    rows = _topic_rows(html)
    assert len(rows) == TOPICS - 50
    assert sorted(first_page + rows) == [f"t{i:03d}" for i in range(TOPICS)]
    assert "topics 51 to 60 of 60" in html and 'href="/links/big?page=1"' in html


def test_a_topics_partitions_open_on_demand(client: TestClient) -> None:
    html = client.get("/links/big", params={"page": 2, "topic": "t055"}).text
    assert re.findall(r'<tr data-partition="([^"]+)"', html) == ["t055-0", "t055-1"]
    assert 'sse-connect="/events/links/big?page=2&amp;topic=t055"' in html
    missing = client.get("/links/big", params={"topic": "nope"}).text
    assert "has no partitions of topic nope" in missing


def test_the_api_filters_topics_and_adds_the_summary(client: TestClient) -> None:
    answer = client.get("/api/links/big", params={"offline": True, "topics": "t03[0-9]"}).json()
    assert {p["topic"] for p in answer["partitions"]} == {f"t03{i}" for i in range(10)}
    assert len(answer["partitions"]) == 20
    summary = answer["summary"]
    assert (summary["topics"], summary["partitions"]) == (10, 20)
    assert summary["by_topic"][0]["topic"] == GAPPED and summary["by_topic"][0]["gaps"] == 1
    every = client.get("/api/links", params={"offline": True}).json()["links"][0]
    assert len(every["partitions"]) == 2 * TOPICS and every["summary"]["topics"] == TOPICS
    refused = client.get("/api/links/big", params={"topics": "("})
    assert refused.status_code == 422 and "is not a valid regular expression" in refused.text


def test_the_live_updates_keep_the_page_and_the_topic(client: TestClient) -> None:
    """The event stream re-renders the same page of topics and the same open topic (a
    live update must not jump back to page 1)."""
    event: list[str] = []
    with client.stream("GET", "/events/links/big", params={"page": 2, "topic": "t055"}) as r:
        for line in r.iter_lines():
            if not line and event:
                break  # the end of the first event
            event.append(line.removeprefix("data: "))
    html = "\n".join(event)
    page_two = _topic_rows(client.get("/links/big", params={"page": 2}).text)
    assert _topic_rows(html) == page_two
    assert re.findall(r'<tr data-partition="([^"]+)"', html) == ["t055-0", "t055-1"]

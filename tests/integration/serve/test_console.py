"""The web console in real headless Chromium, against `kmigrate serve` on a free port,
real sandbox clusters and a real mirror: the overview lists the running migration; the
migration page's lag cells move while records flow (Server-Sent Events, no reload);
the verify report opens; each step button asks first, a dismissed question changes
nothing, a refused step shows the guard's reason and an accepted one is performed;
/docs renders with no network; a token-protected console asks to sign in.

Each test saves a screenshot under its temporary directory."""

from __future__ import annotations

import json
import os
import signal
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Dialog, Page, Request, expect

from kmigrate.config import load_settings
from kmigrate.store import store_for
from kmigrate.store.runs import get_run
from tests.integration.conftest import Clusters
from tests.integration.migration.harness import Migration, fill, new_migration
from tests.integration.serve.browser import Server, chromium

RECORDS = 600
WAIT_MS = 120_000


@pytest.fixture(scope="module")
def started(
    clusters: Clusters, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Migration, Server]]:
    m = new_migration(clusters, tmp_path_factory.mktemp("console"), records=RECORDS)
    m.ok("migrate", "start", str(m.plan))
    m.wait_topic("IN_SYNC")
    server = Server(m.config, m.folder / "serve.log")
    yield m, server
    server.stop()
    m.stop_mirror()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as found:
        yield found


@pytest.fixture
def page(browser: Browser, tmp_path: Path) -> Iterator[Page]:
    opened = browser.new_page(viewport={"width": 1280, "height": 800})
    opened.set_default_timeout(30_000)
    yield opened
    opened.screenshot(path=str(tmp_path / "screenshot.png"), full_page=True)
    opened.close()


def _cells(page: Page, column: str) -> str:
    """A JS expression: the sum of the partitions table's ``column`` cells."""
    return (
        f"[...document.querySelectorAll('#partitions td.{column}')]"
        ".reduce((s, td) => s + (parseInt(td.textContent.replace(/,/g, '')) || 0), 0)"
    )


def test_the_overview_lists_the_running_migration(
    started: tuple[Migration, Server], page: Page
) -> None:
    m, server = started
    page.goto(server.url + "/")
    row = page.locator("#migrations tbody tr", has_text=m.name)
    expect(row).to_be_visible()
    expect(row.locator("td").nth(1)).to_contain_text("running")
    expect(row).to_contain_text(f"IN_SYNC {m.topic}")
    expect(row).to_contain_text(f"ON_SOURCE {m.group}")
    page.keyboard.press("Tab")  # the skip link, then the navigation: keyboard reachable
    expect(page.locator(":focus")).to_have_text("Skip to content")
    row.get_by_role("link", name=m.name).click()
    expect(page.locator("h1")).to_have_text(f"Migration {m.name}")


def test_lag_cells_move_while_records_flow(
    started: tuple[Migration, Server], page: Page, clusters: Clusters
) -> None:
    """The mirror is paused (SIGSTOP) while 900 records are written: the page shows the
    lag grow to 900 and fall back to 0 as the mirror copies them, without reloading."""
    m, server = started
    page.goto(f"{server.url}/migrations/{m.name}")
    expect(page.locator("#partitions td.lag").first).to_have_text("0")
    before = page.evaluate(_cells(page, "mirrored"))
    page.evaluate("window.stillTheSamePage = true")
    run = get_run(store_for(load_settings(m.config)), m.name)
    assert run is not None
    os.kill(run.pid, signal.SIGSTOP)
    try:
        fill(clusters.source, m.topic, 900, first=RECORDS)
        page.wait_for_function(f"{_cells(page, 'lag')} === 900", timeout=WAIT_MS)
        page.screenshot(path=str(m.folder / "lagging.png"))
    finally:
        os.kill(run.pid, signal.SIGCONT)
    page.wait_for_function(
        f"{_cells(page, 'lag')} === 0 && {_cells(page, 'mirrored')} === {before + 900}",
        timeout=WAIT_MS,
    )
    assert page.evaluate("window.stillTheSamePage") is True  # updated in place


def test_the_verify_report_opens(started: tuple[Migration, Server], page: Page) -> None:
    m, server = started
    page.goto(f"{server.url}/migrations/{m.name}")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Verify now").click()
    report = page.get_by_role("link", name="open the report")
    expect(report).to_be_visible(timeout=240_000)
    expect(page.locator("#verify-outcome")).to_contain_text("The copies are equal")
    report.click()
    frame = page.frame_locator("iframe#report")
    expect(frame.locator("#verdict")).to_have_text("Source and target match")
    expect(frame.locator("#partitions")).to_contain_text(m.topic)

    job = int(page.url.rsplit("/", 1)[1])  # the API answers the same run as JSON
    result = _json(f"{server.url}/api/jobs/{job}")["result"]
    assert result["ok"] is True and result["link"] == m.name
    metrics = urllib.request.urlopen(f"{server.url}/metrics", timeout=10).read().decode()
    assert f'kmigrate_verify_ok{{link="{m.name}"}} 1.0' in metrics


def test_step_buttons_ask_then_refuse_or_act(started: tuple[Migration, Server], page: Page) -> None:
    m, server = started
    posts: list[str] = []
    page.on("request", lambda r: _note_post(r, posts))
    page.goto(f"{server.url}/migrations/{m.name}")
    promote = page.get_by_role("button", name=f"Promote {m.topic}")
    before, history = m.states(), m.outcomes()

    asked: list[str] = []
    page.once("dialog", lambda d: _answer(d, asked, accept=False))
    promote.click()
    assert asked and "Promote" in asked[0] and "Continue?" in asked[0]
    assert posts == [] and m.states() == before and m.outcomes() == history  # nothing sent

    page.once("dialog", lambda d: d.accept())
    promote.click()
    refusal = page.locator("#outcome .refusal")
    expect(refusal).to_contain_text(
        f"still read on the source by group(s) {m.group}", timeout=WAIT_MS
    )
    assert m.states() == before
    assert m.outcomes()[-1] == ("promote", "refused")

    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name=f"Move group {m.group}").click()
    # a job on a busy machine takes more than Playwright's default 5 s
    expect(page.locator("#outcome .job.done")).to_contain_text(
        f"consumers {m.group}", timeout=WAIT_MS
    )
    assert m.states()[f"group:{m.group}"][0] == "MOVED"

    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name=f"Promote {m.topic}").click()  # redrawn after the move
    expect(page.locator("#outcome .job.done")).to_contain_text(
        f"promote {m.topic}", timeout=WAIT_MS
    )
    assert m.topic_state() == "PROMOTED"
    expect(page.locator("#history")).to_contain_text("refused", timeout=WAIT_MS)  # live
    expect(page.get_by_role("button", name=f"Verify and retire {m.topic}")).to_be_visible()
    page.screenshot(path=str(m.folder / "promoted.png"), full_page=True)


def test_docs_render_without_the_network(started: tuple[Migration, Server], page: Page) -> None:
    _, server = started
    elsewhere: list[str] = []

    def only_here(route: object) -> None:
        url = route.request.url  # type: ignore[attr-defined]
        if url.startswith(server.url):
            route.continue_()  # type: ignore[attr-defined]
        else:
            elsewhere.append(url)
            route.abort()  # type: ignore[attr-defined]

    page.route("**/*", only_here)
    page.goto(f"{server.url}/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("kmigrate")
    expect(
        page.locator(".swagger-ui").get_by_text("/api/migrations/{name}/steps/{step}")
    ).to_be_visible()
    assert elsewhere == []


def test_a_token_protected_console_asks_to_sign_in(
    started: tuple[Migration, Server], page: Page, tmp_path: Path
) -> None:
    m, _ = started
    token = "console-token-0123456789"
    (tmp_path / "token").write_text(token)
    guarded = Server(m.config, tmp_path / "serve.log", "--token-file", str(tmp_path / "token"))
    try:
        page.goto(f"{guarded.url}/migrations/{m.name}")
        expect(page.locator("h1")).to_have_text("Sign in")
        page.fill("#token", "not-the-token-at-all")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_contain_text("not the server's token")
        page.fill("#token", token)
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("h1")).to_have_text(f"Migration {m.name}")
        cookies = page.context.cookies()
        assert cookies and all(token not in c["value"] for c in cookies)
        assert token not in page.content()
    finally:
        guarded.stop()


def _json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as answer:
        found: dict[str, Any] = json.load(answer)
    return found


def _note_post(request: Request, posts: list[str]) -> None:
    if request.method == "POST":
        posts.append(request.url)


def _answer(dialog: Dialog, asked: list[str], *, accept: bool) -> None:
    asked.append(dialog.message)
    if accept:
        dialog.accept()
    else:
        dialog.dismiss()

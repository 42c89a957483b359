"""The web console: server-rendered pages (Jinja2), htmx for the buttons, Server-Sent
Events for live lag. Every page reads the sampler's last sample; every button runs
the same guarded step as the API (and the CLI) and shows its outcome or refusal."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, StreamingResponse
from fastapi.templating import Jinja2Templates

from kmigrate.errors import NotFoundError
from kmigrate.migration.status import next_steps
from kmigrate.mirror.status import LinkStatus
from kmigrate.mirror.summary import page, summarise
from kmigrate.serve.charts import line
from kmigrate.serve.console_steps import buttons
from kmigrate.serve.jobs import Job
from kmigrate.serve.sampler import Point, Sample
from kmigrate.serve.served import Served
from kmigrate.serve.steps import StepRequest, runner
from kmigrate.store.migrations import events_of, require_migration

TEMPLATES = Path(__file__).parent / "templates"
POLL_S = 0.5  # how often an event stream looks for a new sample
HISTORY_SHOWN = 30
TOPICS_PER_PAGE = 50  # a link's page lists its topics this many at a time


def _when(ms: int | None) -> str:
    if not ms:
        return ""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _number(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def templates() -> Jinja2Templates:
    found = Jinja2Templates(directory=str(TEMPLATES))
    found.env.filters["when"] = _when
    found.env.filters["number"] = _number
    return found


class Console:
    """The pages and fragments, each a method; ``router`` maps them to paths."""

    def __init__(self, served: Served) -> None:
        self.served = served
        self.sampler = served.sampler
        self.pages = templates()

    # ------------------------------------------------------------------ rendering

    def page(self, request: Request, template: str, **context: Any) -> HTMLResponse:
        return self.pages.TemplateResponse(request, template, context)

    def fragment(self, template: str, **context: Any) -> str:
        return self.pages.get_template(template).render(**context)

    @staticmethod
    def charts(sample: Sample, link: str) -> dict[str, Any]:
        points: tuple[Point, ...] = sample.history.get(link, ())
        lags = [(p.at_ms, None if p.lag is None else float(p.lag)) for p in points]
        rates = [(p.at_ms, p.records_per_s) for p in points]
        return {"lag": line(lags, sample.at_ms), "rate": line(rates, sample.at_ms)}

    def migration_live(self, sample: Sample, name: str) -> dict[str, Any]:
        return {
            "name": name,
            "snap": sample.migrations.get(name),
            "problem": sample.problems.get(name),
            "sampled": sample.at_ms,
            "charts": self.charts(sample, name),
            "events": list(reversed(events_of(self.served.store, name, HISTORY_SHOWN))),
        }

    def link_live(
        self, sample: Sample, status: LinkStatus, number: int, topic: str | None
    ) -> dict[str, Any]:
        """A link's live part: its totals, page ``number`` of its topics (those that
        need attention first) and, when asked, the partitions of ``topic``."""
        return {"status": status, "charts": self.charts(sample, status.link.name)} | link_view(
            status, number, topic
        )

    @staticmethod
    def steps(sample: Sample, name: str) -> dict[str, Any]:
        snap = sample.migrations.get(name)
        return {
            "name": name,
            "snap": snap,
            "buttons": buttons(snap) if snap else [],
            "next_steps": next_steps(snap) if snap else [],
            "oob": False,
        }

    def job_fragment(self, job: Job, migration: str | None = None) -> HTMLResponse:
        """A job's outcome; once a migration's step ends, its buttons are redrawn too."""
        steps = None
        if job.finished.is_set() and migration is not None:
            steps = self.steps(self.sampler.refresh(), migration)
        return HTMLResponse(self.fragment("_job.html", job=job, steps=steps, migration=migration))

    # ---------------------------------------------------------------------- pages

    def overview(self, request: Request) -> HTMLResponse:
        sample = self.sampler.current()
        return self.page(
            request,
            "overview.html",
            sample=sample,
            links=sorted(sample.links.values(), key=lambda s: s.link.name),
            migrations=sorted(sample.migrations.items()),
            problems=sorted(sample.problems.items()),
            charts={name: self.charts(sample, name) for name in sample.links},
            jobs=self.served.jobs.recent(),
        )

    def migration(self, request: Request, name: str) -> HTMLResponse:
        sample = self.sampler.current()
        if name not in sample.migrations and name not in sample.problems:
            sample = self.sampler.refresh()  # started a moment ago?
            if name not in sample.migrations and name not in sample.problems:
                require_migration(self.served.store, name)  # the CLI's words if unknown
        return self.page(
            request,
            "migration.html",
            **(self.migration_live(sample, name) | self.steps(sample, name)),
            verified=self.served.verify_runs.last.get(name),
        )

    def link(
        self, request: Request, name: str, page: int = 1, topic: str | None = None
    ) -> HTMLResponse:
        """A link: per topic, paged, those that need attention first; ``topic``'s
        partitions on demand."""
        sample = self.sampler.current()
        status = sample.links.get(name)
        if status is None:
            raise NotFoundError(f"no link '{name}'")
        return self.page(
            request,
            "link.html",
            name=name,
            **self.link_live(sample, status, page, topic),
            verified=self.served.verify_runs.last.get(name),
        )

    def verify_page(self, request: Request, job_id: int) -> HTMLResponse:
        report = self.served.verify_runs.by_job.get(job_id)
        if report is None:
            raise NotFoundError(f"no verify report from job {job_id} (kept while the server runs)")
        return self.page(request, "verify.html", job_id=job_id, report=report)

    def login(self, request: Request, next: str = "/", failed: bool = False) -> HTMLResponse:
        return self.page(request, "login.html", next=local_path(next), failed=failed)

    # -------------------------------------------------------------- live updates

    async def _stream(
        self, request: Request, render: Callable[[Sample], str]
    ) -> AsyncIterator[str]:
        seen = -1
        while not await request.is_disconnected():
            sample = await asyncio.to_thread(self.sampler.current)
            if sample.seq != seen:
                seen = sample.seq
                rows = render(sample).splitlines()
                yield "event: live\n" + "".join(f"data: {row}\n" for row in rows) + "\n"
            await asyncio.sleep(POLL_S)

    def _events(self, request: Request, render: Callable[[Sample], str]) -> StreamingResponse:
        return StreamingResponse(
            self._stream(request, render),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    def migration_events(self, request: Request, name: str) -> StreamingResponse:
        def render(sample: Sample) -> str:
            return self.fragment("_migration_live.html", **self.migration_live(sample, name))

        return self._events(request, render)

    def link_events(
        self, request: Request, name: str, page: int = 1, topic: str | None = None
    ) -> StreamingResponse:
        """The link page's live part, for the same page and topic as the page."""

        def render(sample: Sample) -> str:
            status = sample.links.get(name)
            if status is None:
                return "<p>the link is gone</p>"
            return self.fragment("_link_live.html", **self.link_live(sample, status, page, topic))

        return self._events(request, render)

    # ------------------------------------------------------------------- buttons

    def step(
        self,
        name: str,
        step: str,
        topic: str | None = None,
        group: str | None = None,
        yes: bool = False,
    ) -> HTMLResponse:
        """A button's step on one topic or group (``yes``: the destructive step the button
        asked about, e.g. retire deleting on the source): run as the API runs it; its
        outcome or refusal comes back as HTML."""
        request = StepRequest(
            topics=[topic] if topic else [], groups=[group] if group else [], yes=yes
        )
        what = f"{step} {topic or group or ''} on migration {name}".replace("  ", " ")
        job = self.served.run_step(
            what, lambda: runner(self.served.settings, self.served.store, name, step, request)
        )
        return self.job_fragment(job, name)

    def job(self, job_id: int, migration: str | None = None) -> HTMLResponse:
        found = self.served.jobs.get(job_id)
        if found is None:
            raise NotFoundError(f"no job {job_id} (jobs are kept while the server runs)")
        return self.job_fragment(found, migration)

    def verify(self, name: str) -> HTMLResponse:
        return self.job_fragment(self.served.verify(name, None))


def router(served: Served) -> APIRouter:
    pages = Console(served)
    console = APIRouter(include_in_schema=False, default_response_class=HTMLResponse)
    console.add_api_route("/", pages.overview)
    console.add_api_route("/migrations/{name}", pages.migration)
    console.add_api_route("/links/{name}", pages.link)
    console.add_api_route("/verify/{job_id}", pages.verify_page)
    console.add_api_route("/login", pages.login)
    console.add_api_route("/events/migrations/{name}", pages.migration_events)
    console.add_api_route("/events/links/{name}", pages.link_events)
    console.add_api_route("/console/migrations/{name}/steps/{step}", pages.step, methods=["POST"])
    console.add_api_route("/console/jobs/{job_id}", pages.job)
    console.add_api_route("/console/links/{name}/verify", pages.verify, methods=["POST"])
    return console


def link_view(status: LinkStatus, number: int, topic: str | None) -> dict[str, Any]:
    """What the link page shows besides the charts: the totals, page ``number`` of the
    topics (`TOPICS_PER_PAGE` each), and the partitions of ``topic`` (None: no topic
    asked for; an empty list: the link has no such topic)."""
    summary = summarise(status)
    partitions = None
    if topic is not None:
        partitions = [p for p in status.partitions if p.topic == topic]
    return {
        "summary": summary,
        "topics": page(summary.by_topic, number, TOPICS_PER_PAGE),
        "topic": topic,
        "partitions": partitions,
    }


def local_path(path: str) -> str:
    """Only a path on this server (no open redirect to another site)."""
    return path if path.startswith("/") and not path.startswith("//") else "/"

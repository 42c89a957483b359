"""What one `kmigrate serve` process holds: its settings and store, the sampler the
pages and metrics read, the background jobs, the metrics registry and the verify
reports it produced."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kmigrate.config import Settings
from kmigrate.errors import KMigrateError
from kmigrate.model.links import compile_topics
from kmigrate.serve.jobs import Job, Jobs
from kmigrate.serve.metrics import Metrics
from kmigrate.serve.sampler import Sampler
from kmigrate.store import Store
from kmigrate.store.links import require_link
from kmigrate.verify.report import VerifyReport, report_json
from kmigrate.verify.runs import verify_link

ANSWER_WITHIN_S = 2.0  # work that ends sooner is answered directly; else a job to poll
Report = Callable[[str], None]


@dataclass
class VerifyRuns:
    """Reports of the verify runs this server started: by job, and each link's last."""

    by_job: dict[int, VerifyReport] = field(default_factory=dict)
    last: dict[str, int] = field(default_factory=dict)  # link -> job id
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, job_id: int, report: VerifyReport) -> None:
        with self._lock:
            self.by_job[job_id] = report
            if report.link is not None:
                self.last[report.link] = job_id

    def latest(self) -> dict[str, VerifyReport]:
        with self._lock:
            return {link: self.by_job[job] for link, job in self.last.items()}


@dataclass
class Served:
    settings: Settings
    store: Store
    sampler: Sampler
    jobs: Jobs
    metrics: Metrics
    verify_runs: VerifyRuns
    token: str | None

    def run_step(self, what: str, prepare: Callable[[], Callable[[Report], dict[str, Any]]]) -> Job:
        """A step as a job, waited for a moment: ``prepare`` refusing (an unknown
        migration, a step without its topics) is the job's refusal too."""
        try:
            run = prepare()
        except KMigrateError as exc:
            job = self.jobs.start(what, _refused(exc))
        else:
            job = self.jobs.submit(what, run)
        return self._waited(job)

    def verify(self, link: str, topics: str | None) -> Job:
        """Verify what ``link`` mirrored (on Spark) as a job; its report is kept."""
        found = require_link(self.store, link)
        pattern = compile_topics(topics) if topics else None

        def work(job: Job) -> dict[str, Any]:
            report = verify_link(self.settings, self.store, found, pattern, job.lines.append)
            self.verify_runs.add(job.id, report)
            return report_json(report)

        return self._waited(self.jobs.start(f"verify link {link}", work))

    def _waited(self, job: Job) -> Job:
        job.finished.wait(ANSWER_WITHIN_S)
        if job.error is not None:
            self.metrics.refusals.labels(job.error.code).inc()
        return job

    @classmethod
    def create(
        cls, settings: Settings, store: Store, token: str | None, refresh_s: float
    ) -> Served:
        sampler = Sampler(settings, store, refresh_s)
        runs = VerifyRuns()
        return cls(settings, store, sampler, Jobs(), Metrics(sampler, runs.latest), runs, token)


def _refused(exc: KMigrateError) -> Callable[[Job], dict[str, Any]]:
    def work(_job: Job) -> dict[str, Any]:
        raise exc

    return work

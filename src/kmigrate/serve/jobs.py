"""Long steps run in the background: a job per request, its progress lines, its result
or the one-line refusal, polled at /api/jobs/{id}. A step that ends (or is refused)
within the request's short wait is answered directly, as the CLI would."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kmigrate.errors import KMigrateError

log = logging.getLogger(__name__)
KEEP = 200  # finished jobs remembered


@dataclass
class Job:
    id: int
    what: str
    state: str = "running"  # running | done | refused | failed
    lines: list[str] = field(default_factory=list)
    result: dict[str, Any] | None = None
    error: KMigrateError | None = None
    started_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    finished: threading.Event = field(default_factory=threading.Event)

    def as_json(self) -> dict[str, Any]:
        return {
            "job": self.id,
            "what": self.what,
            "state": self.state,
            "lines": list(self.lines),
            "result": self.result,
            "kind": self.error.code if self.error else None,
            "error": self.error.message if self.error else None,
            "started_ms": self.started_ms,
        }


class Jobs:
    def __init__(self) -> None:
        self._jobs: dict[int, Job] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def submit(self, what: str, work: Callable[[Callable[[str], None]], dict[str, Any]]) -> Job:
        """Run ``work`` (given a function that records its progress lines) in the background."""
        return self.start(what, lambda job: work(job.lines.append))

    def start(self, what: str, work: Callable[[Job], dict[str, Any]]) -> Job:
        """Run ``work`` (given its own job) in the background."""
        job = Job(next(self._ids), what)
        with self._lock:
            self._jobs[job.id] = job
            for old in sorted(self._jobs)[:-KEEP]:
                if self._jobs[old].finished.is_set():
                    del self._jobs[old]
        threading.Thread(target=self._run, args=(job, work), daemon=True).start()
        return job

    def get(self, job_id: int) -> Job | None:
        return self._jobs.get(job_id)

    def recent(self, count: int = 10) -> list[Job]:
        with self._lock:
            return [self._jobs[i] for i in sorted(self._jobs, reverse=True)[:count]]

    @staticmethod
    def _run(job: Job, work: Callable[[Job], dict[str, Any]]) -> None:
        try:
            job.result = work(job)
            job.state = "done"
        except KMigrateError as exc:
            job.error, job.state = exc, "refused"
        except Exception as exc:  # a bug: logged with its traceback, one line to the client
            log.exception("job %s (%s) failed", job.id, job.what)
            job.error, job.state = KMigrateError(f"internal error: {exc}"), "failed"
        finally:
            job.finished.set()

"""The REST API under /api: the same JSON as the CLI's --json output, and the CLI's
actions run as background jobs (answered directly when they end, or are refused,
within a moment; else 202 and the job to poll)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kmigrate.durations import seconds_of
from kmigrate.errors import (
    ClusterError,
    ConfigError,
    ConflictError,
    KafkaOperationError,
    KMigrateError,
    NotFoundError,
)
from kmigrate.gateway.control.report import migrations_json
from kmigrate.gateway.control.shared_state import configured
from kmigrate.groups.migrate import migrate_group
from kmigrate.groups.plan import plan_group
from kmigrate.groups.report import migrate_json, plan_json
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.serve import views
from kmigrate.serve.jobs import Job
from kmigrate.serve.served import Served
from kmigrate.serve.steps import StepRequest, runner, start_runner
from kmigrate.store.links import require_link
from kmigrate.verify.html import render_html

_STATUS = (  # the first class that matches decides
    (NotFoundError, 404),
    (ConflictError, 409),
    (ConfigError, 422),
    (ClusterError, 503),
    (KafkaOperationError, 502),
)


def status_of(exc: KMigrateError) -> int:
    return next((status for kind, status in _STATUS if isinstance(exc, kind)), 500)


class NewMigration(BaseModel):
    """A plan, as `kmigrate plan new` writes it (YAML or JSON text)."""

    model_config = ConfigDict(extra="forbid")
    plan: str = Field(min_length=1)


class GroupMove(BaseModel):
    """`groups migrate`: shows the move; commits it only with ``yes`` (and no
    ``dry_run``). ``wait`` (a duration) waits for the mirror to reach the group's commits.
    The older ``apply`` and ``wait_s`` are still read."""

    model_config = ConfigDict(extra="forbid")
    yes: bool = False
    dry_run: bool = False
    wait: float | None = None
    failover: bool = False

    @model_validator(mode="before")
    @classmethod
    def _older_names(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            for old, new in (("apply", "yes"), ("wait_s", "wait")):
                if old in data:
                    data.setdefault(new, data.pop(old))
        return data

    @field_validator("wait", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return None if value is None else seconds_of(value)

    @property
    def goes_ahead(self) -> bool:
        return self.yes and not self.dry_run


class VerifyRun(BaseModel):
    """What to verify of the link: ``topics``, a regex, keeps only those of its topics
    (default: all of them)."""

    model_config = ConfigDict(extra="forbid")
    topics: str | None = None  # a regex: only these of the link's topics


def job_answer(job: Job) -> Response:
    """The job's JSON: 200 when done, the refusal's status when refused, 202 running."""
    body = job.as_json()
    if not job.finished.is_set():
        return JSONResponse(body, status_code=202, headers={"Location": f"/api/jobs/{job.id}"})
    if job.error is not None:
        return JSONResponse(body, status_code=status_of(job.error))
    return JSONResponse(body)


def router(served: Served) -> APIRouter:
    api = APIRouter(prefix="/api")
    settings, store = served.settings, served.store

    @api.get(
        "/clusters",
        description="`clusters list --json`: the configured clusters, every secret redacted; "
        "asks no broker.",
    )
    def clusters() -> dict[str, Any]:
        return views.clusters(settings)

    @api.get("/links")
    def links(offline: bool = False, topics: str | None = None) -> dict[str, Any]:
        """`mirror status --json`: every partition, and a per-topic "summary" (those
        that need attention first); ``topics``, a regex, keeps only those topics."""
        return views.links(settings, store, offline, topics)

    @api.get(
        "/links/{name}",
        description="One link, as in `mirror status --json`: its partitions and per-topic "
        "summary; `offline` reads the store only (asks no cluster); `topics`, a regex, "
        "keeps only those topics.",
    )
    def link(name: str, offline: bool = False, topics: str | None = None) -> dict[str, Any]:
        return views.link(settings, store, name, offline, topics)

    @api.get("/links/{name}/groups/{group}")
    def translation(name: str, group: str) -> dict[str, Any]:
        """`groups translate --link NAME --group GROUP`: per partition the group's source
        commit, its exact target offset (or, with the source down, what may repeat)."""
        found = require_link(store, name)
        with _admins(served, found.source, found.target) as (source, target):
            return plan_json(plan_group(store, found, group, source, target, fall_back=True))

    @api.post("/links/{name}/groups/{group}/migrate")
    def move_group(name: str, group: str, request: GroupMove) -> Response:
        """`groups migrate`: a dry run unless ``yes``; refused (nothing committed) while
        the group has members on either side or a position is not mirrored."""
        found = require_link(store, name)

        def work(_report: Callable[[str], None]) -> dict[str, Any]:
            with _admins(served, found.source, found.target) as (source, target):
                moved = migrate_group(
                    store,
                    found,
                    group,
                    source,
                    target,
                    apply=request.goes_ahead,
                    wait_s=request.wait,
                    failover=request.failover,
                )
            return migrate_json(moved)

        verb = "migrate" if request.goes_ahead else "plan the move of"
        return job_answer(served.run_step(f"{verb} group {group} over {name}", lambda: work))

    @api.post("/links/{name}/verify")
    def verify(name: str, request: VerifyRun) -> Response:
        """Compare what the link mirrored record by record (on Spark); the job's result
        is `verify --json`'s report, its HTML at /api/verify/{job}/report.html."""
        return job_answer(served.verify(name, request.topics))

    @api.get(
        "/verify/{job_id}/report.html",
        response_class=HTMLResponse,
        description="The HTML report of a verify run this server started (the job that "
        "POST /api/links/{name}/verify answered); kept while the server runs.",
    )
    def verify_report(job_id: int) -> HTMLResponse:
        report = served.verify_runs.by_job.get(job_id)
        if report is None:
            raise NotFoundError(f"no verify report from job {job_id} (kept while the server runs)")
        return HTMLResponse(render_html(report))

    @api.get(
        "/migrations",
        description="Every migration in the store, with each topic's and group's state.",
    )
    def migrations() -> dict[str, Any]:
        return views.migrations(store)

    @api.post("/migrations")
    def new_migration(request: NewMigration) -> Response:
        """`kmigrate migrate start PLAN`: check the plan, copy its ACLs, start mirroring
        (a plan already started resumes its mirror)."""
        return job_answer(
            served.run_step(
                "start a migration",
                lambda: start_runner(settings, store, request.plan, "the plan sent"),
            )
        )

    @api.get(
        "/migrations/{name}",
        description="`migrate status --json` for one migration: each topic's and group's state "
        "and what the clusters show now.",
    )
    def migration(name: str) -> dict[str, Any]:
        return views.migration(settings, store, name)

    @api.get(
        "/migrations/{name}/history",
        description="`migrate history --json`: the migration's events, oldest first; `last` "
        "keeps only the last N.",
    )
    def history(name: str, last: Annotated[int | None, Query(ge=1)] = None) -> dict[str, Any]:
        return views.history(settings, store, name, last)

    @api.post("/migrations/{name}/steps/{step}")
    def step(name: str, step: str, request: StepRequest) -> Response:
        """Run a guarded step (start, consumers, promote, retire, rollback) as the CLI
        does. A step that ends or is refused within a moment is answered directly (a
        refusal with the CLI's reason and kind); a longer one answers 202 and its job."""
        return job_answer(
            served.run_step(
                f"{step} on migration {name}",
                lambda: runner(settings, store, name, step, request),
            )
        )

    @api.get(
        "/jobs/{job_id}",
        description="A background job: what it does, its state, its output lines, and its "
        "result or refusal (`kind`, `error`) once done; kept while the server runs.",
    )
    def job(job_id: int) -> Response:
        found = served.jobs.get(job_id)
        if found is None:
            raise NotFoundError(f"no job {job_id} (jobs are kept while the server runs)")
        return JSONResponse(found.as_json())

    @api.get(
        "/reassignments/{cluster}",
        description="`reassign status --json`: the reassignment kmigrate applied on the "
        "cluster, as the store has it (the API only reads).",
    )
    def reassignment(cluster: str) -> dict[str, Any]:
        return views.reassignment(settings, store, cluster)

    @api.get(
        "/zk-moves/{cluster}",
        description="`zk status --json`: a ZooKeeper ensemble move of the cluster, and its "
        "history.",
    )
    def zk_move(cluster: str) -> dict[str, Any]:
        return views.zk_move(settings, store, cluster)

    @api.get(
        "/kraft/{cluster}",
        description="`kraft status --json`: a migration of the cluster to KRaft as the store "
        "has it (its phase, controllers and history; the API only reads).",
    )
    def kraft_move(cluster: str) -> dict[str, Any]:
        return views.kraft_move(settings, store, cluster)

    @api.get("/gateway/migrations")
    def gateway_migrations() -> dict[str, Any]:
        """`gateway migrations --json`: every partition migration through the gateway
        clusters.yaml configures."""
        registry, _home = configured(settings)
        try:
            table = registry.read_routes()
        finally:
            registry.close()
        return migrations_json(settings, table)

    return api


@contextmanager
def _admins(
    served: Served, source: str, target: str
) -> Iterator[tuple[ClusterAdmin, ClusterAdmin]]:
    """Both clusters' admin clients; an unknown cluster is named as such."""
    with (
        ClusterAdmin(served.settings.cluster(source)) as s,
        ClusterAdmin(served.settings.cluster(target)) as t,
    ):
        yield s, t

"""The `kmigrate serve` application: the REST API and /metrics over the metadata store
and clusters.yaml the CLI uses. A refusal answers as the CLI would: the same one-line
reason, the error's stable kind, and an HTTP status by kind."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from kmigrate.config import Settings
from kmigrate.errors import (
    ClusterError,
    ConfigError,
    ConflictError,
    KafkaOperationError,
    KMigrateError,
    NotFoundError,
)
from kmigrate.serve import views
from kmigrate.serve.jobs import Job, Jobs
from kmigrate.serve.metrics import Metrics
from kmigrate.serve.security import authorized
from kmigrate.serve.steps import StepRequest, runner
from kmigrate.store import store_for

_STATUS = (  # the first class that matches decides
    (NotFoundError, 404),
    (ConflictError, 409),
    (ConfigError, 422),
    (ClusterError, 503),
    (KafkaOperationError, 502),
)
OPEN_PATHS = {"/healthz"}
ANSWER_WITHIN_S = 2.0  # a step that ends sooner is answered directly; else 202 and a job
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}


def status_of(exc: KMigrateError) -> int:
    return next((status for kind, status in _STATUS if isinstance(exc, kind)), 500)


def create_app(settings: Settings, token: str | None = None) -> FastAPI:
    app = FastAPI(
        title="kmigrate",
        summary="Kafka migrations: links, migrations, groups, reassignments",
        docs_url=None,  # Swagger UI comes from a CDN: not served until it is vendored
        redoc_url=None,
    )
    store = store_for(settings)
    metrics = Metrics(settings, lambda: store)
    jobs = Jobs()

    @app.middleware("http")
    async def bearer_token(request: Request, call_next: Any) -> Response:
        if request.url.path not in OPEN_PATHS and not authorized(
            request.headers.get("authorization"), token
        ):
            metrics.refusals.labels("unauthorized").inc()
            return JSONResponse(
                {"kind": "unauthorized", "error": "a bearer token is required"},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        origin = request.headers.get("origin")
        if request.method not in SAFE_METHODS and origin is not None:
            own = f"{request.url.scheme}://{request.headers.get('host', '')}"
            if origin != own:  # a page of another site posting with the user's browser
                metrics.refusals.labels("cross-origin").inc()
                return JSONResponse(
                    {"kind": "cross-origin", "error": f"requests from {origin} are refused"},
                    status_code=403,
                )
        response: Response = await call_next(request)
        return response

    @app.exception_handler(KMigrateError)
    async def refused(_request: Request, exc: KMigrateError) -> JSONResponse:
        metrics.refusals.labels(exc.code).inc()
        return JSONResponse({"kind": exc.code, "error": exc.message}, status_code=status_of(exc))

    @app.exception_handler(RequestValidationError)
    async def malformed(_request: Request, exc: RequestValidationError) -> JSONResponse:
        metrics.refusals.labels("config").inc()
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "malformed request"}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return JSONResponse(
            {"kind": "config", "error": f"{where or 'request'}: {first.get('msg')}"},
            status_code=422,
        )

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/metrics")
    def prometheus() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/api/clusters")
    def clusters() -> dict[str, Any]:
        return views.clusters(settings)

    @app.get("/api/links")
    def links(offline: bool = False) -> dict[str, Any]:
        return views.links(settings, store, offline)

    @app.get("/api/links/{name}")
    def link(name: str, offline: bool = False) -> dict[str, Any]:
        return views.link(settings, store, name, offline)

    @app.get("/api/migrations")
    def migrations() -> dict[str, Any]:
        return views.migrations(store)

    @app.get("/api/migrations/{name}")
    def migration(name: str) -> dict[str, Any]:
        return views.migration(settings, store, name)

    @app.get("/api/migrations/{name}/history")
    def history(name: str, last: int | None = None) -> dict[str, Any]:
        return views.history(settings, store, name, last)

    @app.post("/api/migrations/{name}/steps/{step}")
    def step(name: str, step: str, request: StepRequest) -> Response:
        """Run a guarded step (consumers, promote, retire, rollback) as the CLI does. A
        step that ends or is refused within a moment is answered directly (a refusal with
        the CLI's reason and kind); a longer one answers 202 and its job to poll."""
        job = jobs.submit(
            f"{step} on migration {name}", runner(settings, store, name, step, request)
        )
        job.finished.wait(ANSWER_WITHIN_S)
        return _job_answer(job)

    @app.get("/api/jobs/{job_id}")
    def job(job_id: int) -> Response:
        found = jobs.get(job_id)
        if found is None:
            raise NotFoundError(f"no job {job_id} (jobs are kept while the server runs)")
        return JSONResponse(found.as_json())

    def _job_answer(job: Job) -> Response:
        body = job.as_json()
        if not job.finished.is_set():
            return JSONResponse(body, status_code=202, headers={"Location": f"/api/jobs/{job.id}"})
        if job.error is not None:
            metrics.refusals.labels(job.error.code).inc()
            return JSONResponse(body, status_code=status_of(job.error))
        return JSONResponse(body)

    @app.get("/api/reassignments/{cluster}")
    def reassignment(cluster: str) -> dict[str, Any]:
        return views.reassignment(settings, store, cluster)

    @app.get("/api/zk-moves/{cluster}")
    def zk_move(cluster: str) -> dict[str, Any]:
        return views.zk_move(settings, store, cluster)

    return app

"""The `kmigrate serve` application: the REST API and /metrics over the metadata store
and clusters.yaml the CLI uses. A refusal answers as the CLI would: the same one-line
reason, the error's stable kind, and an HTTP status by kind."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
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
from kmigrate.serve.metrics import Metrics
from kmigrate.serve.security import authorized
from kmigrate.store import store_for

_STATUS = (  # the first class that matches decides
    (NotFoundError, 404),
    (ConflictError, 409),
    (ConfigError, 422),
    (ClusterError, 503),
    (KafkaOperationError, 502),
)
OPEN_PATHS = {"/healthz"}


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
        response: Response = await call_next(request)
        return response

    @app.exception_handler(KMigrateError)
    async def refused(_request: Request, exc: KMigrateError) -> JSONResponse:
        metrics.refusals.labels(exc.code).inc()
        return JSONResponse({"kind": exc.code, "error": exc.message}, status_code=status_of(exc))

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

    @app.get("/api/reassignments/{cluster}")
    def reassignment(cluster: str) -> dict[str, Any]:
        return views.reassignment(settings, store, cluster)

    @app.get("/api/zk-moves/{cluster}")
    def zk_move(cluster: str) -> dict[str, Any]:
        return views.zk_move(settings, store, cluster)

    return app

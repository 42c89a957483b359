"""The `kmigrate serve` application: the REST API (/api), the web console, /metrics and
the API's documentation (/docs, Swagger UI served from this package, no CDN), over
the metadata store and clusters.yaml the CLI uses.

Who may ask: everyone on loopback without a token; with one, API calls carry it as a
bearer token and the console signs in once (a cookie derived from it). A request that
changes something must come from this server's own pages (same origin). A refusal
answers as the CLI would: its one-line reason, its stable kind, a status by kind."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException

from kmigrate.config import Settings
from kmigrate.errors import KMigrateError
from kmigrate.serve import EVERY_S, api, console
from kmigrate.serve.api import status_of
from kmigrate.serve.security import authorized, session_cookie, signed_in
from kmigrate.serve.served import Served
from kmigrate.store import store_for

STATIC = Path(__file__).parent / "static"
OPEN_PATHS = {"/healthz", "/login"}
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
COOKIE = "kmigrate_session"
# Paths a script reads (answered 401 without the token); a page asks to sign in instead.
MACHINE_PREFIXES = ("/api/", "/metrics", "/openapi.json", "/events/", "/console/")


def create_app(settings: Settings, token: str | None = None, refresh_s: float = EVERY_S) -> FastAPI:
    served = Served.create(settings, store_for(settings), token, refresh_s)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        served.sampler.close()

    app = FastAPI(
        title="kmigrate",
        summary="Kafka migrations: links, migrations, groups, verification, reassignments, "
        "ZooKeeper moves, gateway migrations",
        docs_url=None,  # served below from the vendored Swagger UI
        redoc_url=None,
        lifespan=lifespan,
    )
    metrics = served.metrics

    def refuse(kind: str, message: str, status: int, **headers: str) -> JSONResponse:
        metrics.refusals.labels(kind).inc()
        return JSONResponse({"kind": kind, "error": message}, status_code=status, headers=headers)

    @app.middleware("http")
    async def guard(request: Request, call_next: Any) -> Response:
        path = request.url.path
        by_header = authorized(request.headers.get("authorization"), token)
        by_cookie = signed_in(request.cookies.get(COOKIE), token)
        if not (by_header or by_cookie or path in OPEN_PATHS or path.startswith("/static/")):
            if request.method == "GET" and not path.startswith(MACHINE_PREFIXES):
                return RedirectResponse(f"/login?next={quote(path)}", status_code=303)
            return refuse(
                "unauthorized", "a bearer token is required", 401, **{"WWW-Authenticate": "Bearer"}
            )
        if request.method not in SAFE_METHODS:
            own = f"{request.url.scheme}://{request.headers.get('host', '')}"
            origin = request.headers.get("origin")
            referer = request.headers.get("referer", "")
            if origin is not None and origin != own:  # another site posting with the browser
                return refuse("cross-origin", f"requests from {origin} are refused", 403)
            if (
                origin is None
                and token is not None
                and not by_header
                and not (referer == own or referer.startswith(own + "/"))
            ):  # a signed-in browser must show where the request came from
                return refuse("cross-origin", "a request without its origin is refused", 403)
        response: Response = await call_next(request)
        return response

    @app.exception_handler(KMigrateError)
    async def refused(request: Request, exc: KMigrateError) -> Response:
        if request.url.path.startswith(MACHINE_PREFIXES):
            return refuse(exc.code, exc.message, status_of(exc))
        metrics.refusals.labels(exc.code).inc()
        page = console.templates().TemplateResponse(
            request, "error.html", {"message": exc.message}, status_code=status_of(exc)
        )
        return page

    @app.exception_handler(RequestValidationError)
    async def malformed(_request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "malformed request"}
        if first.get("type") == "json_invalid":
            ctx = first.get("ctx")
            error = ctx.get("error", "") if isinstance(ctx, dict) else ""
            return refuse("config", f"the request body is not JSON ({error})", 422)
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return refuse("config", f"{where or 'request'}: {first.get('msg')}", 422)

    @app.exception_handler(HTTPException)
    async def no_route(request: Request, exc: HTTPException) -> Response:
        """An unknown path or method: for scripts, the API's one-line JSON refusal."""
        path = request.url.path
        if not path.startswith(MACHINE_PREFIXES) or exc.status_code not in (404, 405):
            return await http_exception_handler(request, exc)
        if exc.status_code == 404:
            return refuse("not-found", f"no such path {path} (the API is listed at /docs)", 404)
        return refuse("usage", f"{request.method} is not allowed on {path}", 405)

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/metrics", include_in_schema=False)
    def prometheus() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="kmigrate API",
            swagger_js_url="/static/vendor/swagger-ui-bundle.js",
            swagger_css_url="/static/vendor/swagger-ui.css",
            swagger_favicon_url="/static/vendor/swagger-favicon-32x32.png",
        )

    @app.post("/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        form = parse_qs((await request.body()).decode(errors="replace"))
        given, target = form.get("token", [""])[0], console.local_path(form.get("next", ["/"])[0])
        if token is None or not authorized(f"Bearer {given}", token):
            metrics.refusals.labels("unauthorized").inc()
            return RedirectResponse(f"/login?failed=true&next={quote(target)}", status_code=303)
        answer = RedirectResponse(target, status_code=303)
        answer.set_cookie(
            COOKIE, session_cookie(token), httponly=True, samesite="strict",
            secure=request.url.scheme == "https",
        )  # fmt: skip
        return answer

    app.include_router(api.router(served))
    app.include_router(console.router(served))
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.state.served = served
    return app

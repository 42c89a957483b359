"""`kmigrate serve`: the web console, the REST API and /metrics, over the same store and
clusters.yaml as the CLI."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, pass_app
from kmigrate.errors import ConfigError
from kmigrate.serve.sampler import EVERY_S
from kmigrate.serve.security import DEFAULT_LISTEN, check_bind, parse_listen, read_token

GRACE_S = 3


@click.command("serve")
@click.option("--listen", default=DEFAULT_LISTEN, show_default=True, help="HOST:PORT to serve on.")
@click.option(
    "--token-file",
    type=click.Path(path_type=Path),
    help="A file holding the bearer token every API call must carry (required off loopback).",
)
@click.option(
    "--refresh",
    "refresh_s",
    type=click.FloatRange(0.2),
    default=EVERY_S,
    show_default=True,
    help="Seconds between reads of the clusters for the live pages and /metrics.",
)
@pass_app
def command(app: AppContext, listen: str, token_file: Path | None, refresh_s: float) -> None:
    """Serve the web console (/), the REST API (/api, documented at /docs) and Prometheus
    metrics (/metrics) until Ctrl-C."""
    import uvicorn

    from kmigrate.serve.app import create_app

    host, port = parse_listen(listen)
    token = read_token(token_file) if token_file else None
    check_bind(host, token)
    sock = _bound(host, port)
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(app.settings, token, refresh_s),
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=GRACE_S,  # live pages keep their event streams open
        )
    )
    render.progress(
        f"serving http://{listen} (console at /, API under /api and /docs, metrics at /metrics"
        + ("; sign in with the token)" if token else ")")
    )
    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    server.run(sockets=[sock])


def _bound(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    return sock

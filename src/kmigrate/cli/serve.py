"""`kmigrate serve`: the web console, the REST API and /metrics, over the same store and
clusters.yaml as the CLI. --listen and --token-file are checked before anything opens."""

from __future__ import annotations

import json
import logging
import socket
import sys
from pathlib import Path

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, pass_app
from kmigrate.cli.options import Duration, duration_option, json_option, renamed
from kmigrate.errors import ConfigError
from kmigrate.serve import EVERY_S
from kmigrate.serve.security import DEFAULT_LISTEN, check_bind, parse_listen, read_token

GRACE_S = 3
MIN_INTERVAL_S = 0.2


@click.command("serve")
@click.option("--listen", default=DEFAULT_LISTEN, show_default=True, help="HOST:PORT to serve on.")
@click.option(
    "--token-file",
    type=click.Path(path_type=Path),
    help="A file holding the bearer token every API call must carry (required off loopback).",
)
@duration_option(
    "--interval",
    "interval",
    default=None,
    minimum=MIN_INTERVAL_S,
    help=f"How often the live pages and /metrics read the clusters [default: {EVERY_S:g}s].",
)
@renamed("--refresh", "--interval", "interval")
@json_option
@pass_app
def command(
    app: AppContext,
    listen: str,
    token_file: Path | None,
    interval: float | str | None,
    as_json: bool,
) -> None:
    """Serve the web console (/), the REST API (/api, documented at /docs) and Prometheus
    metrics (/metrics) until Ctrl-C. With --json, the address it listens on is printed as
    one JSON object once it listens."""
    host, port = parse_listen(listen)
    every = (
        EVERY_S
        if interval is None
        else Duration(minimum=MIN_INTERVAL_S).convert(interval, None, click.get_current_context())
    )
    token = read_token(token_file) if token_file else None
    check_bind(host, token)
    app.settings  # noqa: B018  (clusters.yaml checked before the port is taken)

    import uvicorn

    from kmigrate.serve.app import create_app

    sock = _bound(host, port)
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(app.settings, token, every),
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=GRACE_S,  # live pages keep their event streams open
        )
    )
    url = f"http://{listen}"
    if as_json:
        # One line, flushed: a script reads it to learn where the server listens.
        address = {"listening": url, "host": host, "port": port, "token": token is not None}
        sys.stdout.write(json.dumps(address) + "\n")
        sys.stdout.flush()
    else:
        render.progress(
            f"serving {url} (console at /, API under /api and /docs, metrics at /metrics"
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

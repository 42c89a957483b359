"""A throwaway PostgreSQL server for the store tests, from the Debian package's binaries.

``make system-deps`` installs the package ``postgresql``; its server programs live in
/usr/lib/postgresql/VERSION/bin. The server gets a fresh data directory, listens on
127.0.0.1 only (on a free port), authenticates every connection with a password
(scram-sha-256) and is stopped when the context ends. PostgreSQL refuses to run as
root, so as root the server runs as the package's ``postgres`` system user.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shlex
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

PG_ROOT = Path("/usr/lib/postgresql")
SYSTEM_USER = "postgres"  # created by the Debian package
USER = "kmigrate"  # the server's superuser, and the database the store uses
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 60
MISSING = (
    "PostgreSQL server binaries (initdb, pg_ctl) not found under "
    f"{PG_ROOT}/*/bin: run `make system-deps`"
)


def server_binaries() -> Path:
    """The bin folder of the newest PostgreSQL installed under /usr/lib/postgresql."""
    found = [
        d for d in PG_ROOT.glob("*/bin") if (d / "initdb").is_file() and (d / "pg_ctl").is_file()
    ]
    if not found:
        pytest.fail(MISSING, pytrace=False)
    return max(found, key=lambda d: _version(d.parent.name))


def _version(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class _Runner:
    """Runs the server programs: directly, or as the ``postgres`` user when we are root."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.prefix: list[str] = []
        self.owner: tuple[int, int] | None = None
        if os.geteuid() == 0:
            try:
                entry = pwd.getpwnam(SYSTEM_USER)
            except KeyError:
                pytest.fail(
                    f"running as root needs the '{SYSTEM_USER}' user of the Debian package "
                    "postgresql: run `make system-deps`",
                    pytrace=False,
                )
            self.prefix = ["runuser", "-u", SYSTEM_USER, "--"]
            self.owner = (entry.pw_uid, entry.pw_gid)

    def own(self, path: Path) -> None:
        if self.owner is not None:
            os.chown(path, *self.owner)

    def run(self, what: str, *argv: str, log: Path | None = None) -> None:
        done = subprocess.run(
            [*self.prefix, *argv],
            cwd=self.home,
            env={**os.environ, "LC_ALL": "C"},
            capture_output=True,
            text=True,
            check=False,
            timeout=START_TIMEOUT_S + 30,
        )
        if done.returncode != 0:
            output = (done.stderr or done.stdout).strip()
            if log is not None and log.is_file():
                output += "\n--- server log (last lines) ---\n" + _tail(log)
            pytest.fail(
                f"PostgreSQL {what} failed (exit {done.returncode}): {output}", pytrace=False
            )


def _tail(path: Path, lines: int = 20) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


@contextmanager
def _traversable(path: Path, needed: bool) -> Iterator[None]:
    """Let other users pass through (not list) ``path``'s folders while the server runs:
    pytest's temporary folders are private to the user running the tests."""
    changed: list[tuple[Path, int]] = []
    if needed:
        for folder in [path, *path.parents]:
            mode = stat.S_IMODE(folder.stat().st_mode)
            if not mode & stat.S_IXOTH:
                folder.chmod(mode | stat.S_IXOTH)
                changed.append((folder, mode))
    try:
        yield
    finally:
        for folder, mode in changed:
            folder.chmod(mode)


def _wait_until_accepting(port: int, password: str, log: Path) -> None:
    """Poll until a password-authenticated TCP connection succeeds."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            with psycopg.connect(
                host="127.0.0.1",
                port=port,
                user=USER,
                password=password,
                dbname="postgres",
                connect_timeout=5,
            ):
                return
        except psycopg.OperationalError as exc:
            if time.monotonic() > deadline:
                pytest.fail(
                    f"PostgreSQL on 127.0.0.1:{port} did not accept connections within "
                    f"{START_TIMEOUT_S}s: {str(exc).strip()}\n{_tail(log)}",
                    pytrace=False,
                )
        time.sleep(0.2)


@contextmanager
def postgres_server(tmp_dir: Path) -> Iterator[str]:
    """Run a fresh PostgreSQL server; yields the SQLAlchemy URL of an empty database."""
    bin_dir = server_binaries()
    home = tmp_dir / "postgres"
    home.mkdir(mode=0o700)
    runner = _Runner(home)
    runner.own(home)
    data, sockets, log = home / "data", home / "sockets", home / "server.log"
    sockets.mkdir(mode=0o700)
    runner.own(sockets)
    password = secrets.token_urlsafe(24)  # URL-safe: goes into the URL as it is
    pwfile = home / "pwfile"
    pwfile.write_text(password + "\n")
    pwfile.chmod(0o600)
    runner.own(pwfile)

    with _traversable(tmp_dir, needed=runner.owner is not None):
        runner.run(
            "initdb",
            str(bin_dir / "initdb"),
            f"--pgdata={data}",
            f"--username={USER}",
            f"--pwfile={pwfile}",
            "--auth=scram-sha-256",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        )
        pwfile.unlink()
        port = free_port()
        options = " ".join(
            shlex.quote(option)
            for option in (
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                f"port={port}",
                "-c",
                f"unix_socket_directories={sockets}",
            )
        )
        pg_ctl = str(bin_dir / "pg_ctl")
        try:
            runner.run(
                "start",
                pg_ctl,
                "start",
                f"--pgdata={data}",
                f"--log={log}",
                f"--options={options}",
                "--wait",
                f"--timeout={START_TIMEOUT_S}",
                log=log,
            )
            _wait_until_accepting(port, password, log)
            with psycopg.connect(
                host="127.0.0.1",
                port=port,
                user=USER,
                password=password,
                dbname="postgres",
                autocommit=True,
            ) as conn:
                conn.execute(f'CREATE DATABASE "{USER}"')
            yield f"postgresql+psycopg://{USER}:{password}@127.0.0.1:{port}/{USER}"
        finally:
            if (data / "postmaster.pid").exists():  # also after a start that timed out
                runner.run(
                    "stop",
                    pg_ctl,
                    "stop",
                    f"--pgdata={data}",
                    "--mode=fast",
                    "--wait",
                    f"--timeout={STOP_TIMEOUT_S}",
                    log=log,
                )

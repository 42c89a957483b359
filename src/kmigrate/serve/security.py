"""Who may talk to `kmigrate serve` (pure): loopback only unless a bearer token guards
every call, compared in constant time; the token read from a file, never from the
command line (where `ps` would show it)."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from pathlib import Path

from kmigrate.errors import ConfigError

DEFAULT_LISTEN = "127.0.0.1:8080"


def parse_listen(text: str) -> tuple[str, int]:
    """``host:port`` or ``[v6]:port``."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--listen {text!r}: give HOST:PORT, e.g. {DEFAULT_LISTEN}")
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Anything but loopback serves the network: refused without a token."""
    if token is None and not is_loopback(host):
        raise ConfigError(
            f"serving on {host} (not loopback) needs --token-file: every API call and "
            "the console then require that bearer token"
        )


def read_token(path: Path) -> str:
    try:
        token = path.read_text().strip()
    except OSError as exc:
        raise ConfigError(f"--token-file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"--token-file {path}: not UTF-8 text") from None
    if len(token) < 16:
        raise ConfigError(f"--token-file {path}: the token must be at least 16 characters")
    return token


def authorized(header: str | None, token: str | None) -> bool:
    """Whether an ``Authorization`` header carries the token (always, without one)."""
    if token is None:
        return True
    if header is None or not header.startswith("Bearer "):
        return False
    return hmac.compare_digest(header.removeprefix("Bearer ").encode(), token.encode())


def session_cookie(token: str) -> str:
    """What a signed-in console keeps in its cookie: derived from the token, never it."""
    return hmac.new(token.encode(), b"kmigrate console session", hashlib.sha256).hexdigest()


def signed_in(cookie: str | None, token: str | None) -> bool:
    """Whether a console cookie belongs to this token (never, without a token)."""
    if token is None or cookie is None:
        return False
    return hmac.compare_digest(cookie.encode(), session_cookie(token).encode())

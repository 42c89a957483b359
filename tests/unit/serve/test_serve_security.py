"""Who may talk to `kmigrate serve` (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmigrate.errors import ConfigError
from kmigrate.serve.security import (
    authorized,
    check_bind,
    parse_listen,
    read_token,
    session_cookie,
    signed_in,
)

TOKEN = "s3cret-token-0123456789"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("127.0.0.1:8080", ("127.0.0.1", 8080)), ("[::1]:9000", ("::1", 9000)),
     ("localhost:1", ("localhost", 1)), ("0.0.0.0:80", ("0.0.0.0", 80))],
)  # fmt: skip
def test_listen_addresses(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen(text) == expected


@pytest.mark.parametrize("text", ["8080", "host:", ":80", "h:99999", "h:x"])
def test_bad_listen_addresses_name_the_format(text: str) -> None:
    with pytest.raises(ConfigError, match="give HOST:PORT"):
        parse_listen(text)


def test_only_loopback_serves_without_a_token() -> None:
    for host in ("127.0.0.1", "127.0.0.2", "::1", "localhost"):
        check_bind(host, None)
    for host in ("0.0.0.0", "10.1.2.3", "::", "example.com"):
        with pytest.raises(ConfigError, match="needs --token-file"):
            check_bind(host, None)
        check_bind(host, TOKEN)


def test_the_token_file_must_hold_a_real_token(tmp_path: Path) -> None:
    good, short = tmp_path / "good", tmp_path / "short"
    good.write_text(TOKEN + "\n")
    short.write_text("abc")
    assert read_token(good) == TOKEN
    with pytest.raises(ConfigError, match="at least 16"):
        read_token(short)
    with pytest.raises(ConfigError, match="--token-file"):
        read_token(tmp_path / "missing")


def test_a_call_carries_the_token_or_is_refused() -> None:
    assert authorized(None, None)
    assert authorized(f"Bearer {TOKEN}", TOKEN)
    for header in (None, "", TOKEN, f"Bearer {TOKEN}x", "Basic abc", f"bearer {TOKEN}"):
        assert not authorized(header, TOKEN)


def test_a_session_cookie_is_derived_from_the_token_and_checked_in_constant_time() -> None:
    token = "a-token-of-twenty-chars"
    cookie = session_cookie(token)
    assert token not in cookie and len(cookie) == 64
    assert signed_in(cookie, token)
    assert not signed_in(cookie, token + "x")
    assert not signed_in(None, token) and not signed_in(cookie, None)
    assert not signed_in("", token)

"""Which SCRAM users a copy creates, and the password file (pure)."""

from __future__ import annotations

import pytest

from kmigrate.errors import ConfigError
from kmigrate.identity.users import Credential, parse_passwords, plan_users

SOURCE = {"alice": ["SCRAM-SHA-256/4096", "SCRAM-SHA-512/8192"], "bob": ["SCRAM-SHA-512/8192"]}


def test_users_with_a_password_are_created_the_others_listed() -> None:
    target = {"alice": ["SCRAM-SHA-512/10000"]}
    plan = plan_users(SOURCE, target, {"alice": "a-secret"}, replace=False)
    assert plan.create == [Credential("alice", "SCRAM-SHA-256", 4096)]
    assert plan.exists == [Credential("alice", "SCRAM-SHA-512", 8192)]
    assert plan.no_password == [Credential("bob", "SCRAM-SHA-512", 8192)]
    replaced = plan_users(SOURCE, target, {"alice": "a", "bob": "b"}, replace=True)
    assert len(replaced.create) == 3 and not replaced.exists and not replaced.no_password


def test_the_password_file_splits_at_the_first_equals_and_skips_comments() -> None:
    text = "# users\n\nalice=p=w=rd\n  bob = spaced \n"
    # the line's ends are trimmed, the name too; the password is the rest as written
    assert parse_passwords(text, "pw.txt") == {"alice": "p=w=rd", "bob": " spaced"}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("alice\n", "pw.txt line 1: give user=password"),
        ("=secret\n", "pw.txt line 1: give user=password"),
        ("alice=\n", "pw.txt line 1: give user=password"),
        ("alice=a\nalice=b\n", "pw.txt line 2: user 'alice' given twice"),
    ],
)
def test_a_bad_line_is_named_by_number_never_by_content(text: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_passwords(text, "pw.txt")
    assert caught.value.message == says
    assert "secret" not in caught.value.message

"""Which SCRAM users a copy creates on the target, from a password file (pure).

Kafka never returns a password or its salted hash, so a user moves by being created again
on the target with the same mechanism and iterations and a password the operator gives.
A user the target already has with that mechanism is left alone unless replacing is
asked for (its clients may use another password there); a user with no password given
is listed, never skipped silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kmigrate.errors import ConfigError

Credentials = Mapping[str, list[str]]  # user -> ["SCRAM-SHA-512/8192", ...]


@dataclass(frozen=True)
class Credential:
    user: str
    mechanism: str  # SCRAM-SHA-256 or SCRAM-SHA-512
    iterations: int

    @property
    def text(self) -> str:
        return f"{self.user} ({self.mechanism}, {self.iterations} iterations)"


@dataclass(frozen=True)
class UserPlan:
    create: list[Credential]  # to write on the target (a password is given)
    exists: list[Credential]  # the target has the user with this mechanism: left alone
    no_password: list[Credential]  # not in the password file: cannot be created


def credentials(found: Credentials) -> list[Credential]:
    """The adapter's "MECHANISM/ITERATIONS" strings as values, sorted."""
    out = []
    for user, infos in sorted(found.items()):
        for info in infos:
            mechanism, _, iterations = info.partition("/")
            out.append(Credential(user, mechanism, int(iterations)))
    return out


def plan_users(
    source: Credentials, target: Credentials, passwords: Mapping[str, str], *, replace: bool
) -> UserPlan:
    on_target = {(c.user, c.mechanism) for c in credentials(target)}
    create, exists, missing = [], [], []
    for c in credentials(source):
        if (c.user, c.mechanism) in on_target and not replace:
            exists.append(c)
        elif c.user not in passwords:
            missing.append(c)
        else:
            create.append(c)
    return UserPlan(create, exists, missing)


def parse_passwords(text: str, where: str) -> dict[str, str]:
    """A password file: one ``user=password`` per line (split at the first ``=``; blank
    lines and lines starting with ``#`` ignored). A bad line is one error naming its
    number, never its content (it may hold a password)."""
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        user, sep, password = stripped.partition("=")
        if not sep or not user.strip() or not password:
            raise ConfigError(f"{where} line {number}: give user=password")
        if user.strip() in found:
            raise ConfigError(f"{where} line {number}: user {user.strip()!r} given twice")
        found[user.strip()] = password
    return found

"""Principal remapping (pure): the target may name the same clients otherwise (another
SASL mechanism, a Kerberos realm, mTLS distinguished names), so ACLs and user quotas are
rewritten on the way.

A map file is YAML with a list of rules under ``principals``, the first that matches
wins; a principal no rule matches stays as it is:

    principals:
      - from: "User:alice"                 # one principal
        to: "User:alice@CORP.EXAMPLE"
      - match: "User:(svc-.*)"             # a regex on the whole principal
        to: "User:\\1@CORP.EXAMPLE"        # its groups as \\1, \\2 ...
      - from: "User:legacy-batch"
        to: null                           # not on the target: listed, never copied

What a rule cannot express on the target (``to: null``; a user quota mapped to a
principal that is not a ``User:``) is listed by whoever applies the map.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kmigrate.documents import yaml_mapping
from kmigrate.errors import ConfigError

WILDCARD = "User:*"


class _Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    from_: str | None = Field(default=None, alias="from")
    match: str | None = None
    to: str | None

    @model_validator(mode="after")
    def one_source(self) -> _Rule:
        if (self.from_ is None) == (self.match is None):
            raise ValueError("give either 'from' (a principal) or 'match' (a regex)")
        for principal in (self.from_, self.to):
            if principal is not None and ":" not in principal:
                raise ValueError(f"'{principal}' is not a principal (TYPE:NAME, e.g. User:alice)")
        return self


class _MapFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    principals: list[_Rule]


@dataclass(frozen=True)
class PrincipalMap:
    """Rules in order: (exact principal or None, compiled regex or None, replacement)."""

    rules: tuple[tuple[str | None, re.Pattern[str] | None, str | None], ...] = ()

    def apply(self, principal: str) -> str | None:
        """The principal on the target; None: it has none (the rule says so)."""
        if principal == WILDCARD:
            return principal  # everyone stays everyone
        for exact, pattern, to in self.rules:
            if exact is not None and principal == exact:
                return to
            if pattern is not None and (found := pattern.fullmatch(principal)):
                return None if to is None else found.expand(to)
        return principal

    def user(self, name: str) -> str | None:
        """A user quota's entity name on the target (quotas name users without the
        ``User:`` prefix); None: the principal maps to nothing, or to another type."""
        mapped = self.apply(f"User:{name}")
        if mapped is None or not mapped.startswith("User:"):
            return None
        return mapped.removeprefix("User:")

    @property
    def empty(self) -> bool:
        return not self.rules


def parse_map(text: str, where: str) -> PrincipalMap:
    raw = yaml_mapping(text, where, "not a principal map (a mapping with 'principals:')")
    try:
        document = _MapFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        at = ".".join(str(p) for p in first["loc"])
        message = str(first["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"{where}: {at}: {message}") from None
    rules = []
    for i, rule in enumerate(document.principals):
        pattern = None
        if rule.match is not None:
            try:
                pattern = re.compile(rule.match)
            except re.error as exc:
                raise ConfigError(f"{where}: principals.{i}.match: not a regex ({exc})") from None
        rules.append((rule.from_, pattern, rule.to))
    return PrincipalMap(tuple(rules))

"""The principal a certificate is to Kafka (pure): ``User:`` and the subject's
distinguished name (RFC 2253) as the broker's ``ssl.principal.mapping.rules`` map it.

The rules are a comma-separated list of ``DEFAULT`` (the name as it is) and
``RULE:pattern/replacement/`` with an optional ``L`` or ``U`` (lower or upper case);
the first rule whose pattern matches the whole name gives the principal, and a name no
rule matches is refused by the broker (so by the controllers too). Java's ``$1`` in a
replacement is Python's ``\\1``; the patterns this understands are those Java and
Python read alike (groups, classes, anchors, quantifiers: what mapping rules use).
"""

from __future__ import annotations

import re

from kmigrate.errors import ConfigError

MAPPING_RULES = "ssl.principal.mapping.rules"
DEFAULT = "DEFAULT"
# one rule: DEFAULT, or RULE:pattern/replacement/[LU], where "\/" escapes a slash
_RULE = re.compile(r"\s*(?:(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?))\s*(?:,|$)")


def mapped(distinguished_name: str, rules: str | None) -> str:
    """``User:`` and the name ``rules`` make of ``distinguished_name``; refused when the
    rules cannot be read or none applies (the brokers refuse that certificate too)."""
    for rule in parse(rules or DEFAULT):
        name = _apply(rule, distinguished_name)
        if name is not None:
            return f"User:{name}"
    raise ConfigError(
        f"{MAPPING_RULES}: no rule maps the brokers' certificate {distinguished_name!r}; pass "
        "--certificate-principal 'User:...' as the brokers see it"
    )


def parse(rules: str) -> list[tuple[str, str, str] | None]:
    """Each rule: None for DEFAULT, else (pattern, replacement, case)."""
    found: list[tuple[str, str, str] | None] = []
    at = 0
    while at < len(rules):
        match = _RULE.match(rules, at)
        if match is None or match.end() == at:
            raise ConfigError(f"{MAPPING_RULES}: cannot read the rule at {rules[at:]!r}")
        at = match.end()
        found.append(None if match.group(1) else (match.group(2), match.group(3), match.group(4)))
    return found


def _apply(rule: tuple[str, str, str] | None, name: str) -> str | None:
    if rule is None:
        return name
    pattern, replacement, case = rule
    try:
        compiled = re.compile(pattern)
    except re.error as e:
        raise ConfigError(f"{MAPPING_RULES}: pattern {pattern!r} cannot be read ({e})") from None
    if compiled.fullmatch(name) is None:
        return None
    result = compiled.sub(_python_replacement(replacement), name)
    return result.lower() if case == "L" else result.upper() if case == "U" else result


def _python_replacement(java: str) -> str:
    """Java's ``$n`` group references as Python's, other text as it is."""
    return re.sub(r"\$(\d+)", r"\\g<\1>", java.replace("\\/", "/"))

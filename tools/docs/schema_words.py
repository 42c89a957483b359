"""JSON schema values in words, for reference tables: a type (`list of string`, `map of
name to secret`, `one of "a", "b"`, a link to a named definition) and a default."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tools.docs.markdown import code

Schema = dict[str, Any]


def type_of(prop: Schema, link: Callable[[str], str]) -> str:
    """A value's type in words: `string`, `secret`, `one of ...`, `list of ...`, `map
    of name to ...`, or ``link(name)`` for a named definition; constraints after it."""
    if "$ref" in prop:
        return link(prop["$ref"].rsplit("/", 1)[-1])
    options = [o for o in prop.get("anyOf", []) + prop.get("allOf", []) if o.get("type") != "null"]
    if options:
        return " or ".join(type_of(o, link) for o in options)
    if "enum" in prop:
        return "one of " + ", ".join(code(json.dumps(v)) for v in prop["enum"])
    kind = prop.get("type", "any")
    if kind == "array":
        return "list of " + type_of(prop.get("items", {}), link)
    if kind == "object" and isinstance(prop.get("additionalProperties"), dict):
        return "map of name to " + type_of(prop["additionalProperties"], link)
    if prop.get("format") == "password":
        kind = "secret"
    return kind + _constraints(prop)


_BOUNDS = {"minimum": "≥", "exclusiveMinimum": ">", "maximum": "≤", "exclusiveMaximum": "<"}


def _constraints(prop: Schema) -> str:
    bounds = [f"{sign} {prop[name]}" for name, sign in _BOUNDS.items() if name in prop]
    if "minLength" in prop:
        bounds.append(f"at least {prop['minLength']} characters")
    return f" ({', '.join(bounds)})" if bounds else ""


def default_of(prop: Schema, required: bool) -> str:
    """What the key is when it is not written: its default as YAML, `required`, or
    `optional` when the default is computed (an empty map, an object's own defaults;
    the description says more)."""
    if required:
        return "required"
    if "default" not in prop:
        return "optional"
    value = prop["default"]
    if value is None:
        return "none"
    return code(value if isinstance(value, str) and value else json.dumps(value))

"""The configuration file's reference, from the JSON schema of its pydantic model: one
section per object of the file (the top level, `clusters.<name>`, `gateway.clients.tls`,
...), each a table of its keys with their type, default and description."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, SecretStr
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import core_schema

from tools.docs.markdown import cell, code, heading, prose, table
from tools.docs.schema_words import default_of, type_of

Schema = dict[str, Any]
TOP = "top level"


class _FileSchema(GenerateJsonSchema):
    """The schema of what a user writes: fields kmigrate fills in itself (excluded from
    serialization) are left out; defaults that are secrets in type only are shown."""

    def field_is_present(self, field: core_schema.ModelField) -> bool:  # type: ignore[override]
        return not field.get("serialization_exclude")

    def encode_default(self, dft: Any) -> Any:
        if isinstance(dft, SecretStr):  # a default in the code is no secret
            return dft.get_secret_value()
        return super().encode_default(dft)


def file_schema(model: type[BaseModel]) -> Schema:
    """``model``'s JSON schema (validation mode), without the fields kmigrate sets itself."""
    return model.model_json_schema(schema_generator=_FileSchema)


@dataclass(frozen=True)
class Section:
    """One object of the file: its definition's name, where it sits (``gateway.clients``)
    and its schema."""

    name: str
    path: str
    schema: Schema

    @property
    def anchor(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.path.lower()).strip("-") or "top-level"


def sections(schema: Schema) -> list[Section]:
    """The top level and every object reachable from it, each once, at the first path
    that reaches it (depth first, in the order keys are declared)."""
    found: dict[str, Section] = {}
    _collect(Section("", TOP, schema), schema.get("$defs", {}), found)
    return list(found.values())


def _collect(section: Section, defs: Schema, found: dict[str, Section]) -> None:
    found[section.name] = section
    path, schema = section.path, section.schema
    for key, prop in schema.get("properties", {}).items():
        where = key if path == TOP else f"{path}.{key}"
        for ref, suffix in _object_refs(prop):
            name = ref.rsplit("/", 1)[-1]
            if name not in found:
                _collect(Section(name, where + suffix, defs[name]), defs, found)


def _object_refs(prop: Schema) -> Iterator[tuple[str, str]]:
    """The object definitions a key holds: ($ref, path suffix), the suffix ``.<name>``
    for a map of them and ``[]`` for a list."""
    if "$ref" in prop:
        yield prop["$ref"], ""
    for option in prop.get("anyOf", []) + prop.get("allOf", []):
        yield from _object_refs(option)
    values = prop.get("additionalProperties")
    if isinstance(values, dict):
        yield from ((ref, ".<name>" + more) for ref, more in _object_refs(values))
    if isinstance(prop.get("items"), dict):
        yield from ((ref, "[]" + more) for ref, more in _object_refs(prop["items"]))


def render(schema: Schema, example: str | None = None) -> str:
    """The whole reference: ``example`` (a file, as YAML), then one section per object,
    the top level first."""
    found = sections(schema)
    links = {section.name: section for section in found}
    parts = [f"```yaml\n{example.strip()}\n```"] if example else []
    parts += [render_section(section, links) for section in found]
    return "\n\n".join(parts) + "\n"


def example_of(docstring: str | None) -> str | None:
    """The literal block after the first ``::`` of a module docstring, dedented."""
    _head, marker, rest = (docstring or "").partition("::\n")
    if not marker:
        return None
    lines = []
    for line in rest.splitlines()[1:]:
        if line and not line.startswith(" "):
            break
        lines.append(line)
    return textwrap.dedent("\n".join(lines)).strip() or None


def _link(section: Section) -> str:
    return f"[{code(section.path)}](#{section.anchor}) (object)"


def render_section(section: Section, links: dict[str, Section]) -> str:
    """A section: heading, what the object is, and a row per key."""
    required = set(section.schema.get("required", []))
    rows = [
        [
            code(key),
            cell(type_of(prop, lambda name: _link(links[name]))),
            cell(default_of(prop, key in required)),
            cell(prop.get("description", "")),
        ]
        for key, prop in section.schema.get("properties", {}).items()
    ]
    title = "Top level" if section.path == TOP else code(section.path)
    parts = [
        heading(2, title, section.anchor),
        prose(section.schema.get("description")),
        table(["Key", "Type", "Default", "Description"], rows),
    ]
    return "\n\n".join(part for part in parts if part)

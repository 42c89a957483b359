"""Schemas as a Schema Registry holds them: under an id, as versions of subjects."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Reference:
    """A schema's reference to another subject's version (Avro named types, Protobuf
    imports, JSON Schema $refs)."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class Schema:
    """A schema as a registry stores it under one id."""

    schema_type: str  # AVRO, PROTOBUF or JSON
    text: str
    references: tuple[Reference, ...] = ()


@dataclass(frozen=True)
class SchemaVersion:
    """One version of one subject, and the id its schema has."""

    subject: str
    version: int
    id: int
    schema: Schema
    deleted: bool = False  # soft-deleted: hidden from lookups, its id still resolves


def same_schema(a: Schema, b: Schema) -> bool:
    """Whether two registries hold the same schema: JSON texts (Avro, JSON Schema) compared
    as parsed JSON, since registries may store them with other spacing."""
    return schema_key(a) == schema_key(b)


def schema_key(schema: Schema) -> tuple[object, ...]:
    """Equal for the same schema, whatever spacing or key order its JSON text has."""
    text = schema.text.strip()
    if schema.schema_type in ("AVRO", "JSON"):
        with contextlib.suppress(ValueError):
            text = json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    return (schema.schema_type, text, tuple(sorted(schema.references)))


def framed_id(data: bytes | None) -> int | None:
    """The schema id a Schema Registry serializer put in front of ``data`` (magic byte 0,
    then the id in 4 bytes, big-endian), or None when ``data`` is not framed so."""
    if data is None or len(data) < 5 or data[0] != 0:
        return None
    return int.from_bytes(data[1:5], "big")

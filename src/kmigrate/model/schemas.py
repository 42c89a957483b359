"""Schemas as a Schema Registry holds them: under an id, as versions of subjects."""

from __future__ import annotations

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

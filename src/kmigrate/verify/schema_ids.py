"""Verify's schema check: every schema id the mirrored records carry resolves to the same
schema on both clusters' registries (pure; the ids come from the digest pass, the
schemas from the registries).

A record written with a Schema Registry serializer starts with a magic byte 0 and the
4-byte id of its schema; a consumer on the target looks that id up in the target's
registry. An id the source's registry does not know either is not counted against the
copy: the bytes only look framed (a key or value that happens to start with 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kmigrate.model.schemas import Schema, same_schema

SAME = "same"
MISSING = "missing-on-target"
DIFFERENT = "different-on-target"
UNKNOWN = "unknown-on-both"  # not a schema id: bytes that start with 0
ONLY_TARGET = "only-on-target"  # the target's consumers resolve it; the source's do not


@dataclass(frozen=True, order=True)
class SchemaUse:
    """Where records first carry a schema id in one partition."""

    topic: str
    partition: int
    offset: int
    part: str  # "key" or "value"

    def describe(self) -> str:
        return f"{self.topic}[{self.partition}] {self.part} at offset {self.offset}"


@dataclass(frozen=True)
class SchemaIdResult:
    schema_id: int
    status: str
    uses: tuple[SchemaUse, ...]  # first use per partition and part, earliest first

    @property
    def ok(self) -> bool:
        return self.status in (SAME, UNKNOWN, ONLY_TARGET)

    def describe(self) -> str:
        first = self.uses[0].describe()
        more = f" (and {len(self.uses) - 1} more partition(s))" if len(self.uses) > 1 else ""
        what = {
            SAME: "resolves to the same schema on both registries",
            MISSING: "is not on the target's registry",
            DIFFERENT: "resolves to another schema on the target's registry",
            UNKNOWN: "is on neither registry (not Schema Registry framing)",
            ONLY_TARGET: "is only on the target's registry",
        }[self.status]
        return f"schema id {self.schema_id} {what}; first used by {first}{more}"


@dataclass(frozen=True)
class SchemaCheck:
    checked: bool
    reason: str  # why not checked, or ""
    ids: tuple[SchemaIdResult, ...] = ()

    @property
    def problems(self) -> tuple[SchemaIdResult, ...]:
        return tuple(r for r in self.ids if not r.ok)


def uses_by_id(
    found: Mapping[tuple[str, int], Mapping[tuple[int, str], int]],
) -> dict[int, tuple[SchemaUse, ...]]:
    """Per schema id, where it is first used in each partition, earliest offsets first."""
    uses: dict[int, list[SchemaUse]] = {}
    for (topic, partition), ids in found.items():
        for (schema_id, part), offset in ids.items():
            uses.setdefault(schema_id, []).append(SchemaUse(topic, partition, offset, part))
    return {
        i: tuple(sorted(u, key=lambda use: (use.offset, use.topic, use.partition)))
        for i, u in sorted(uses.items())
    }


def judge(
    uses: Mapping[int, tuple[SchemaUse, ...]],
    source: Mapping[int, Schema | None],
    target: Mapping[int, Schema | None],
) -> SchemaCheck:
    results = []
    for schema_id, where in uses.items():
        mine, theirs = source.get(schema_id), target.get(schema_id)
        if mine is None:
            status = ONLY_TARGET if theirs is not None else UNKNOWN
        elif theirs is None:
            status = MISSING
        else:
            status = SAME if same_schema(mine, theirs) else DIFFERENT
        results.append(SchemaIdResult(schema_id, status, where))
    return SchemaCheck(True, "", tuple(results))

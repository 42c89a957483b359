"""The outcome of a verification, and its JSON form (field names are stable;
docs/how-to/verify.md documents them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kmigrate.verify.compare import Difference, RecordView, SideDigest
from kmigrate.verify.ranges import Note, Span
from kmigrate.verify.schema_ids import SchemaCheck

MATCH = "match"
MISMATCH = "mismatch"
NOTHING_TO_COMPARE = "nothing-to-compare"
CHANGED_DURING_CHECK = "changed-during-check"

PREVIEW_BYTES = 64
TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}


@dataclass(frozen=True)
class SideResult:
    span: Span
    digest: SideDigest


@dataclass(frozen=True)
class PartitionResult:
    topic: str
    partition: int
    status: str
    message: str
    source: SideResult | None = None
    target: SideResult | None = None
    mapped_records: int | None = None  # what the offset map says the range holds
    notes: tuple[Note, ...] = ()
    difference: Difference | None = None


@dataclass(frozen=True)
class VerifyReport:
    mode: str  # "link" | "position"
    link: str | None
    source_cluster: str
    target_cluster: str
    started_ms: int
    seconds: float
    partitions: tuple[PartitionResult, ...]
    schemas: SchemaCheck = field(default_factory=lambda: SchemaCheck(False, "not asked"))

    @property
    def ok(self) -> bool:
        differ = any(p.status in (MISMATCH, CHANGED_DURING_CHECK) for p in self.partitions)
        return not differ and not self.schemas.problems

    def count(self, status: str) -> int:
        return sum(1 for p in self.partitions if p.status == status)

    @property
    def records(self) -> int:
        return sum(p.source.digest.records for p in self.partitions if p.source)

    @property
    def bytes(self) -> int:
        return sum(
            side.digest.bytes for p in self.partitions for side in (p.source, p.target) if side
        )


def preview(data: bytes | None, limit: int = PREVIEW_BYTES) -> str | None:
    """Binary-safe and short: printable ASCII as is, other bytes as \\xNN, then '…'."""
    if data is None:
        return None
    text = "".join(
        chr(b) if 32 <= b < 127 and b != 0x5C else ("\\\\" if b == 0x5C else f"\\x{b:02x}")
        for b in data[:limit]
    )
    return text + ("…" if len(data) > limit else "")


def record_json(record: RecordView | None) -> dict[str, Any] | None:
    if record is None:
        return None
    return {
        "offset": record.offset,
        "key": preview(record.key),
        "key_bytes": None if record.key is None else len(record.key),
        "value": preview(record.value),
        "value_bytes": None if record.value is None else len(record.value),
        "headers": [{"key": k, "value": preview(v)} for k, v in record.headers],
        "timestamp": record.timestamp,
        "timestamp_type": TIMESTAMP_TYPES.get(record.timestamp_type, str(record.timestamp_type)),
    }


def _side_json(side: SideResult | None) -> dict[str, Any] | None:
    if side is None:
        return None
    return {
        "start": side.span.start,
        "end": side.span.end,
        "records": side.digest.records,
        "bytes": side.digest.bytes,
        "digest": side.digest.digest,
    }


def report_json(report: VerifyReport) -> dict[str, Any]:
    return {
        "ok": report.ok,
        "mode": report.mode,
        "link": report.link,
        "source_cluster": report.source_cluster,
        "target_cluster": report.target_cluster,
        "started_ms": report.started_ms,
        "seconds": round(report.seconds, 3),
        "summary": {
            "partitions": len(report.partitions),
            "matched": report.count(MATCH),
            "mismatched": report.count(MISMATCH),
            "nothing_to_compare": report.count(NOTHING_TO_COMPARE),
            "changed_during_check": report.count(CHANGED_DURING_CHECK),
            "records": report.records,
            "bytes": report.bytes,
        },
        "schemas": {
            "checked": report.schemas.checked,
            "not_checked_because": report.schemas.reason or None,
            "problems": len(report.schemas.problems),
            "ids": [
                {
                    "id": r.schema_id,
                    "status": r.status,
                    "first_uses": [
                        {
                            "topic": u.topic,
                            "partition": u.partition,
                            "offset": u.offset,
                            "part": u.part,
                        }
                        for u in r.uses
                    ],
                }
                for r in report.schemas.ids
            ],
        },
        "partitions": [
            {
                "topic": p.topic,
                "partition": p.partition,
                "status": p.status,
                "message": p.message,
                "source": _side_json(p.source),
                "target": _side_json(p.target),
                "mapped_records": p.mapped_records,
                "not_compared": [
                    {"kind": n.kind, "side": n.side, "start": n.start, "end": n.end}
                    for n in p.notes
                ],
                "difference": None
                if p.difference is None
                else {
                    "kind": p.difference.kind,
                    "source_offset": p.difference.source_offset,
                    "target_offset": p.difference.target_offset,
                    "fields": list(p.difference.fields),
                    "source_record": record_json(p.difference.source_record),
                    "target_record": record_json(p.difference.target_record),
                },
            }
            for p in report.partitions
        ],
    }

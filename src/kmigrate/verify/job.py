"""`kmigrate verify`: plan the ranges, digest both clusters on Spark, locate differences.

Only the driver talks to the store and the admin API; executors read Kafka. The order:
plan every partition from the map (or from the given start) and both clusters' offsets,
run one Spark job for the chunk digests of both sides, read back the first differing
chunk of each mismatched partition, then re-check the log starts so that records
deleted while the job ran are reported as such, not as differences. A verification of
at most DRIVER_OFFSETS source offsets is digested by the driver with the same task code
(Spark is not started): a Spark job's start would be most of its time, as for the
mirror's small batches.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kmigrate.config import ClusterConfig
from kmigrate.config.tuning import count_from_env
from kmigrate.errors import ConfigError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.links import Gap, Link, TopicState
from kmigrate.schema_registry.client import SchemaRegistry
from kmigrate.store import Store
from kmigrate.store.links import link_topics_of
from kmigrate.store.offsets import gaps_of, load_partitions
from kmigrate.verify.compare import (
    CHUNK,
    EXTRA_ON_TARGET,
    LOOKAHEAD,
    Chunk,
    Difference,
    SideDigest,
    first_difference,
    first_differing_chunk,
)
from kmigrate.verify.fingerprint import Digests, chunk_digests, read_records
from kmigrate.verify.ranges import (
    PartitionCheck,
    Span,
    as_in_flight,
    mapped_records,
    plan_linked,
    plan_positional,
)
from kmigrate.verify.report import (
    CHANGED_DURING_CHECK,
    MATCH,
    MISMATCH,
    NOTHING_TO_COMPARE,
    PartitionResult,
    SideResult,
    VerifyReport,
)
from kmigrate.verify.schema_ids import SchemaCheck, judge, uses_by_id

if TYPE_CHECKING:
    from pyspark import SparkContext

# A verification of at most this many source offsets runs in the driver, not on Spark;
# 0 sends every verification to Spark.
DRIVER_OFFSETS_ENV = "KMIGRATE_VERIFY_DRIVER_OFFSETS"
DRIVER_OFFSETS = 10_000

TopicPartition = tuple[str, int]
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Sides:
    source: ClusterConfig
    target: ClusterConfig
    source_admin: ClusterAdmin
    target_admin: ClusterAdmin


def _offsets(admin: ClusterAdmin, pairs: list[TopicPartition]) -> dict[TopicPartition, Span]:
    """Each partition's log start and the end a read_committed consumer reads to."""
    lows = admin.partition_offsets(pairs, "earliest")
    ends = admin.partition_offsets(pairs, "latest", committed_only=True)
    return {tp: Span(lows[tp], ends[tp]) for tp in pairs}


def plan_link(
    store: Store, link: Link, topics: re.Pattern[str] | None, sides: Sides
) -> list[PartitionCheck]:
    states = [
        s for s in load_partitions(store, link.name) if not topics or topics.fullmatch(s.topic)
    ]
    pairs = [(s.topic, s.partition) for s in states]
    source = _offsets(sides.source_admin, pairs)
    target = _offsets(sides.target_admin, pairs)
    gaps: dict[TopicPartition, list[Gap]] = {}
    for gap in gaps_of(store, link.name):
        gaps.setdefault((gap.topic, gap.partition), []).append(gap)
    promoted = {t.topic for t in link_topics_of(store, link.name) if t.state is TopicState.PROMOTED}
    return [
        plan_linked(
            s.topic,
            s.partition,
            s.map,
            source[(s.topic, s.partition)],
            target[(s.topic, s.partition)],
            gaps.get((s.topic, s.partition), ()),
            target_start=s.target_start,
            promoted=s.topic in promoted,
        )
        for s in states
    ]


def plan_position(
    topics: re.Pattern[str],
    start: str,
    sides: Sides,
    start_file: dict[TopicPartition, tuple[int, int]] | None = None,
) -> list[PartitionCheck]:
    """Every partition of the matching source topics, from ``start`` on each side:
    ``earliest``, ``@EPOCH_MS`` (first record at or after it), or the positions of a
    JSON file read by `read_start_file` (only the partitions it lists)."""
    names = [t for t in sides.source_admin.list_topics() if topics.fullmatch(t.name)]
    if not names:
        raise ConfigError(f"no source topic matches --topics '{topics.pattern}'")
    pairs = [(t.name, p.partition) for t in names for p in t.partitions]
    explicit = start_file
    if explicit is None and not (start == "earliest" or start.startswith("@")):
        explicit = read_start_file(start)
    if explicit is not None:
        pairs = [tp for tp in pairs if tp in explicit]
    present = {
        (t.name, p.partition) for t in sides.target_admin.list_topics() for p in t.partitions
    }
    missing = [f"{t}[{p}]" for t, p in pairs if (t, p) not in present]
    if missing:
        raise ConfigError(
            f"the target has no partition {', '.join(missing[:5])}"
            f"{' …' if len(missing) > 5 else ''}: copy the topics first or narrow --topics"
        )
    source = _offsets(sides.source_admin, pairs)
    target = _offsets(sides.target_admin, pairs)
    if start.startswith("@"):
        source = _from_time(sides.source_admin, source, _epoch_ms(start))
        target = _from_time(sides.target_admin, target, _epoch_ms(start))
    elif explicit is not None:
        source = {tp: Span(max(explicit[tp][0], s.start), s.end) for tp, s in source.items()}
        target = {tp: Span(max(explicit[tp][1], t.start), t.end) for tp, t in target.items()}
    return [plan_positional(t, p, source[(t, p)], target[(t, p)]) for t, p in pairs]


def _epoch_ms(text: str) -> int:
    if not text[1:].isdigit():
        raise ConfigError(f"--from '{text}' must be earliest, @EPOCH_MS or a JSON file")
    return int(text[1:])


def _from_time(
    admin: ClusterAdmin, spans: dict[TopicPartition, Span], ms: int
) -> dict[TopicPartition, Span]:
    found = admin.offsets_for_times({tp: ms for tp in spans})
    spans_from = {}
    for tp, s in spans.items():
        at = found[tp]
        spans_from[tp] = Span(s.end if at is None else max(at, s.start), s.end)
    return spans_from


def read_start_file(path: str) -> dict[TopicPartition, tuple[int, int]]:
    """Source and target offsets per partition from ``path``, checked (no cluster asked):
    ``{"topic": {"0": {"source": 120, "target": 0}}}``, offsets not negative."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"--from '{path}' must be earliest, @EPOCH_MS or an existing JSON file")
    try:
        raw = json.loads(file.read_bytes())
        found = {
            (topic, int(p)): (int(pos["source"]), int(pos["target"]))
            for topic, parts in raw.items()
            for p, pos in parts.items()
        }
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(
            f'{path} must look like {{"topic": {{"0": {{"source": 120, "target": 0}}}}}} '
            f"({_one_line(exc)})"
        ) from None
    bad = [f"{t}[{p}]" for (t, p), offsets in found.items() if p < 0 or min(offsets) < 0]
    if bad:
        raise ConfigError(f"{path}: partitions and offsets cannot be negative ({bad[0]})")
    return found


def _one_line(exc: Exception) -> str:
    text = str(exc).splitlines()
    return text[0][:120] if text else type(exc).__name__


def driver_offsets_from_env() -> int:
    """``KMIGRATE_VERIFY_DRIVER_OFFSETS`` (default DRIVER_OFFSETS); a ConfigError (exit
    2) for anything but a whole number. The CLI reads it before any store or cluster."""
    return count_from_env(DRIVER_OFFSETS_ENV, DRIVER_OFFSETS)


def source_offsets(checks: list[PartitionCheck]) -> int:
    """The source offsets the checks digest (their target counterparts aside)."""
    return sum(c.source.size for c in checks if c.source and c.source.size)


def run_checks(
    spark: SparkContext | None, checks: list[PartitionCheck], sides: Sides, progress: Progress
) -> tuple[list[PartitionResult], SchemaCheck]:
    """Digest both sides of every check on Spark (in this process without ``spark``),
    then locate each difference; the same pass finds the schema ids the target's records
    carry, checked on both registries."""
    unchecked = _why_no_schema_check(sides)
    source_spans = {(c.topic, c.partition): c.source for c in checks if c.source and c.source.size}
    target_spans = {(c.topic, c.partition): c.target for c in checks if c.target and c.target.size}
    tails = {(c.topic, c.partition): c for c in checks if c.tail is not None}
    comparable = sum(1 for c in checks if c.source is not None and c.target is not None)
    offsets = source_offsets(checks)
    where = f"on Spark ({spark.master})" if spark is not None else "in this process"
    progress(
        f"digesting {comparable} partition(s), up to {offsets:,} source offsets and "
        f"their target counterparts, {where}"
    )
    source_tails = {tp: c.tail_source for tp, c in tails.items() if c.tail_source is not None}
    target_tails = {tp: c.tail for tp, c in tails.items() if c.tail is not None}
    digests = chunk_digests(
        spark,
        {
            "source": (sides.source, source_spans),
            "target": (sides.target, target_spans),
            "source-tail": (sides.source, source_tails),
            "target-tail": (sides.target, target_tails),
        },
        limits={("source-tail", *tp): span.size for tp, span in target_tails.items()},
        schema_ids=() if unchecked else ("target",),
    )
    results = [_judge(c, digests.chunks, sides, progress) for c in checks]
    schemas = (
        SchemaCheck(False, unchecked) if unchecked else _check_schema_ids(digests, sides, progress)
    )
    return _recheck_retention(results, checks, sides), schemas


def _why_no_schema_check(sides: Sides) -> str:
    """Why the schema ids cannot be checked ("" when they can: both name a registry)."""
    missing = [c.name for c in (sides.source, sides.target) if c.schema_registry is None]
    if not missing:
        return ""
    return f"cluster {' and '.join(repr(m) for m in missing)} name(s) no schema_registry"


def _check_schema_ids(digests: Digests, sides: Sides, progress: Progress) -> SchemaCheck:
    found = {(t, p): ids for (side, t, p), ids in digests.schema_ids.items() if side == "target"}
    uses = uses_by_id(found)
    if uses:
        progress(f"looking up {len(uses)} schema id(s) on both registries")
    source = SchemaRegistry(sides.source).schemas(uses)
    target = SchemaRegistry(sides.target).schemas(uses)
    return judge(uses, source, target)


def _judge(
    check: PartitionCheck,
    digests: dict[tuple[str, str, int], list[Chunk]],
    sides: Sides,
    progress: Progress,
) -> PartitionResult:
    result = _judge_mapped(check, digests, sides, progress)
    if check.tail is None or result.status not in (MATCH, NOTHING_TO_COMPARE):
        return result
    assert check.tail_source is not None
    extra = _foreign_tail_record(check, check.tail, check.tail_source, digests, sides)
    if extra is None:
        return replace(result, notes=as_in_flight(check).notes)
    return replace(
        result,
        status=MISMATCH,
        message=f"extra record on the target at offset {extra.target_offset}, past the "
        "mirrored range: it is not the source's next record, so the mirror did not write it",
        difference=extra,
    )


def _foreign_tail_record(
    check: PartitionCheck,
    tail: Span,
    tail_source: Span,
    digests: dict[tuple[str, str, int], list[Chunk]],
    sides: Sides,
) -> Difference | None:
    """The first target record past the map that is not the source's next record (None
    when every one is: a mirror batch not recorded yet)."""
    tp = (check.topic, check.partition)
    src = digests.get(("source-tail", *tp), [])
    tgt = digests.get(("target-tail", *tp), [])
    index = first_differing_chunk(src, tgt)
    if index is None:
        return None
    from_source = src[index].first_offset if index < len(src) else None
    from_target = tgt[index].first_offset if index < len(tgt) else tail.end
    source = (
        []
        if from_source is None
        else read_records(sides.source, *tp, Span(from_source, tail_source.end), CHUNK)
    )
    target = read_records(sides.target, *tp, Span(from_target, tail.end), CHUNK)
    for i, t in enumerate(target):
        s = source[i] if i < len(source) else None
        if s is None or s.fingerprint != t.fingerprint:
            return Difference(EXTRA_ON_TARGET, None if s is None else s.offset, t.offset, (), s, t)
    return None


def _judge_mapped(
    check: PartitionCheck,
    digests: dict[tuple[str, str, int], list[Chunk]],
    sides: Sides,
    progress: Progress,
) -> PartitionResult:
    if check.source is None or check.target is None:
        return PartitionResult(
            check.topic,
            check.partition,
            NOTHING_TO_COMPARE,
            "nothing mirrored that both clusters still hold",
            notes=check.notes,
        )
    src = digests.get(("source", check.topic, check.partition), [])
    tgt = digests.get(("target", check.topic, check.partition), [])
    source = SideResult(check.source, SideDigest.of(src))
    target = SideResult(check.target, SideDigest.of(tgt))
    expected = mapped_records(check)
    base = {
        "topic": check.topic,
        "partition": check.partition,
        "source": source,
        "target": target,
        "mapped_records": expected,
        "notes": check.notes,
    }
    index = first_differing_chunk(src, tgt, check.map)
    if index is None:
        if expected is not None and expected != source.digest.records:
            return PartitionResult(
                status=MISMATCH,
                message=f"both sides hold the same {source.digest.records:,} records, but the "
                f"offset map says the range holds {expected:,} (source records added or "
                "compacted away since they were mirrored)",
                **base,  # type: ignore[arg-type]
            )
        return PartitionResult(
            status=MATCH,
            message=f"{source.digest.records:,} records identical",
            **base,  # type: ignore[arg-type]
        )
    progress(f"locating the first difference in {check.topic}[{check.partition}]")
    want = CHUNK + LOOKAHEAD + 1
    from_source = src[index].first_offset if index < len(src) else check.source.end
    from_target = tgt[index].first_offset if index < len(tgt) else check.target.end
    difference = first_difference(
        read_records(
            sides.source,
            check.topic,
            check.partition,
            Span(from_source, check.source.end),
            want,
        ),
        read_records(
            sides.target,
            check.topic,
            check.partition,
            Span(from_target, check.target.end),
            want,
        ),
        check.map,
    )
    if difference is None:
        return PartitionResult(
            status=CHANGED_DURING_CHECK,
            message="the digests differ but the records read back match: the data changed "
            "while verify ran; run it again",
            **base,  # type: ignore[arg-type]
        )
    return PartitionResult(
        status=MISMATCH,
        message=difference.describe(),
        difference=difference,
        **base,  # type: ignore[arg-type]
    )


def _recheck_retention(
    results: list[PartitionResult], checks: Iterable[PartitionCheck], sides: Sides
) -> list[PartitionResult]:
    """A mismatch in a partition whose log start moved past the compared range's start
    during the job is retention racing verify, not a difference."""
    suspects = {
        (c.topic, c.partition): c
        for c, r in zip(checks, results, strict=True)
        if r.status == MISMATCH and c.source is not None and c.target is not None
    }
    if not suspects:
        return results
    pairs = list(suspects)
    lows = {
        "source": sides.source_admin.partition_offsets(pairs, "earliest"),
        "target": sides.target_admin.partition_offsets(pairs, "earliest"),
    }
    out = []
    for result in results:
        c = suspects.get((result.topic, result.partition))
        tp = (result.topic, result.partition)
        raced = (
            c is not None
            and c.source is not None
            and c.target is not None
            and (lows["source"][tp] > c.source.start or lows["target"][tp] > c.target.start)
        )
        out.append(_raced(result) if raced else result)
    return out


def _raced(r: PartitionResult) -> PartitionResult:
    return PartitionResult(
        r.topic,
        r.partition,
        CHANGED_DURING_CHECK,
        "retention deleted records of the compared range while verify ran; run it again",
        r.source,
        r.target,
        r.mapped_records,
        r.notes,
    )


def verify(
    spark_factory: Callable[[], SparkContext],
    sides: Sides,
    plan: Callable[[], list[PartitionCheck]],
    *,
    mode: str,
    link: str | None,
    progress: Progress,
    driver_offsets: int | None = None,
) -> VerifyReport:
    """``driver_offsets``: the most source offsets digested in this process (None: from
    the environment, ``driver_offsets_from_env``)."""
    started = time.time()
    in_driver = driver_offsets_from_env() if driver_offsets is None else driver_offsets
    checks = plan()
    if not checks:
        raise ConfigError("nothing to verify: no partition matches (is the link mirroring?)")
    spark = spark_factory() if source_offsets(checks) > in_driver else None
    results, schemas = run_checks(spark, checks, sides, progress)
    return VerifyReport(
        mode,
        link,
        sides.source.name,
        sides.target.name,
        int(started * 1000),
        time.time() - started,
        tuple(results),
        schemas,
    )

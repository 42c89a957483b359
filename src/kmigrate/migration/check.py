"""`plan check`: every reason the plan would fail, found before anything runs.

Checks the plan against both clusters: the source topics still have the planned
partition counts, no target topic conflicts (another link's, a different partition
count, records that belong to no link), groups read only planned topics and do not
already consume on the target, the target can take the ACLs, the target's Schema
Registry holds no other schema under the source's ids, and source retention
leaves the mirror time to catch up at the measured (or assumed) copy rate. A plan cut
in waves gets each wave's copy and catch-up time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from kmigrate.groups.view import view_group
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.migration.acls import acl_support
from kmigrate.migration.identity import schema_problems
from kmigrate.migration.plan import Plan
from kmigrate.store import Store
from kmigrate.store.links import owner_of
from kmigrate.store.runs import get_run

# Records/s one kmigrate mirror copied on 2 cores (bench/results, 2026-11-21); used
# when the link has never run here and no --mirror-rate is given.
ASSUMED_MIRROR_RATE = 40_000.0
DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000


@dataclass(frozen=True)
class TopicEstimate:
    topic: str
    backlog: int  # records the mirror still has to copy (whole topic on a first start)
    incoming_per_s: float  # producers' rate on the source, sampled
    retention_left_s: float | None  # until the oldest record may be deleted (None: never)


@dataclass(frozen=True)
class WaveEstimate:
    """One wave's time, from the mirror's rate and the producers' rate sampled now."""

    wave: int
    topics: int
    groups: int
    backlog: int  # records to copy now
    incoming_per_s: float  # producers' rate into the wave's topics
    copy_s: float  # the backlog at the mirror's rate, were producers stopped
    # Until in sync while producers go on writing, the waves before it still mirrored
    # (their producers' rate taken off the mirror's); None: never.
    catch_up_s: float | None


@dataclass
class CheckReport:
    problems: list[str] = field(default_factory=list)
    estimates: list[TopicEstimate] = field(default_factory=list)
    mirror_rate: float = ASSUMED_MIRROR_RATE
    rate_source: str = "assumed"
    catch_up_s: float | None = None  # None: never (producers outpace the mirror)
    waves: list[WaveEstimate] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def check_plan(
    plan: Plan,
    store: Store,
    source: ClusterAdmin,
    target: ClusterAdmin,
    *,
    sample_s: float = 3.0,
    mirror_rate: float | None = None,
    started: tuple[set[str], set[str]] = (set(), set()),
) -> CheckReport:
    """``started``: (topics, groups) an earlier start already took on; not checked again."""
    report = CheckReport()
    present = _check_topics(plan, store, source, target, report, started[0])
    _check_groups(plan, source, target, report, started[1])
    _check_acls(plan, source, target, report)
    report.problems += schema_problems(plan, source.cluster, target.cluster)
    _rate(plan, store, mirror_rate, report)
    if present:
        _check_catch_up(plan, source, present, sample_s, report)
    return report


def _check_topics(
    plan: Plan,
    store: Store,
    source: ClusterAdmin,
    target: ClusterAdmin,
    report: CheckReport,
    skip: set[str],
) -> dict[str, int]:
    """Check the topics; returns the partition count of each one the source has."""
    names = [n for n in plan.topic_names() if n not in skip]
    on_source = {t.name: t for t in source.describe_topics_if_present(names)}
    on_target = {t.name: t for t in target.describe_topics_if_present(names)}
    for planned in plan.topics:
        name = planned.name
        if name in skip:
            continue
        found = on_source.get(name)
        if found is None:
            report.problems.append(f"topic {name} does not exist on source '{plan.source}'")
            continue
        if found.partition_count != planned.partitions:
            report.problems.append(
                f"topic {name} has {found.partition_count} partitions on source "
                f"'{plan.source}', the plan says {planned.partitions}; write the plan again"
            )
        existing = on_target.get(name)
        if existing is None:
            continue
        owner = owner_of(store, plan.target, name)
        if owner is not None and owner != plan.name:
            report.problems.append(
                f"topic {name} on target '{plan.target}' belongs to link '{owner}'"
            )
        elif existing.partition_count != found.partition_count:
            report.problems.append(
                f"topic {name} exists on target '{plan.target}' with "
                f"{existing.partition_count} partitions (source has {found.partition_count}); "
                "delete it or drop the topic from the plan"
            )
        elif owner is None and any(w.high > w.low for w in target.watermarks(name)):
            report.problems.append(
                f"topic {name} exists on target '{plan.target}' with records no link wrote; "
                "delete it (or its records) or drop the topic from the plan"
            )
    return {n: on_source[n].partition_count for n in names if n in on_source}


def _check_groups(
    plan: Plan, source: ClusterAdmin, target: ClusterAdmin, report: CheckReport, skip: set[str]
) -> None:
    names = set(plan.topic_names())
    for group in plan.groups:
        if group.name in skip:
            continue
        on_source = view_group(source, group.name)
        outside = sorted({t for t, _ in on_source.committed if t not in names})
        if outside:
            report.problems.append(
                f"group {group.name} also commits offsets for {', '.join(outside)}, not in the "
                "plan; add those topics or delete their offsets on the source"
            )
        on_target = view_group(target, group.name)
        if on_target.members:
            report.problems.append(
                f"group {group.name} already has {on_target.members} active member(s) on "
                f"target '{plan.target}'"
            )


def _check_acls(
    plan: Plan, source: ClusterAdmin, target: ClusterAdmin, report: CheckReport
) -> None:
    if not plan.acls:
        return
    support = acl_support(target)
    if support.acls is None:
        report.problems.append(
            f"target '{plan.target}' cannot take the plan's {len(plan.acls)} ACL(s) "
            f"({support.problem}); configure an authorizer there or remove them from the plan"
        )


def _rate(plan: Plan, store: Store, given: float | None, report: CheckReport) -> None:
    report.mirror_rate, report.rate_source = mirror_rate(store, plan.name, given)


def mirror_rate(store: Store, link: str, given: float | None) -> tuple[float, str]:
    """Records/s the mirror copies, and where that figure comes from: ``given``, else the
    link's last run (measured), else this machine's benchmark (assumed)."""
    if given:
        return given, "given"
    run = get_run(store, link)
    if run is not None and run.records_per_s > 0:
        return run.records_per_s, "measured"
    return ASSUMED_MIRROR_RATE, "assumed"


def _check_catch_up(
    plan: Plan, source: ClusterAdmin, topics: dict[str, int], sample_s: float, report: CheckReport
) -> None:
    pairs = [(t, p) for t, count in topics.items() for p in range(count)]
    starts = source.partition_offsets(pairs, "earliest")
    first = source.partition_offsets(pairs, "latest")
    began = time.monotonic()
    time.sleep(sample_s)  # the sample window itself: how fast producers write now
    ends = source.partition_offsets(pairs, "latest")
    elapsed = max(time.monotonic() - began, 1e-3)
    configs = {t.name: t.configs for t in plan.topics}
    for topic, count in topics.items():
        mine = [(topic, p) for p in range(count)]
        backlog = sum(ends[tp] - starts[tp] for tp in mine)
        incoming = sum(ends[tp] - first[tp] for tp in mine) / elapsed
        left = _retention_left(source, topic, configs[topic]) if backlog else None
        report.estimates.append(TopicEstimate(topic, backlog, incoming, left))
    backlog = sum(e.backlog for e in report.estimates)
    incoming = sum(e.incoming_per_s for e in report.estimates)
    spare = report.mirror_rate - incoming
    report.catch_up_s = backlog / spare if spare > 0 else None
    report.waves = wave_estimates(plan, report.estimates, report.mirror_rate)
    by_wave = {t: w.catch_up_s for w in report.waves for t in _wave_topics(plan, w.wave)}
    if report.catch_up_s is None:
        report.problems.append(
            f"producers write {incoming:,.0f} records/s to the plan's topics, faster than the "
            f"mirror's {report.mirror_rate:,.0f} records/s ({report.rate_source}); it would "
            "never catch up: split the plan or run the mirror on a Spark cluster"
        )
        return
    for e in report.estimates:
        # In a wave, the topic waits for its wave's catch-up, not the whole plan's.
        needs = by_wave.get(e.topic)
        needs = report.catch_up_s if needs is None else needs
        if e.retention_left_s is not None and e.retention_left_s < needs:
            report.problems.append(
                f"topic {e.topic}: the mirror needs about {needs:,.0f}s to catch up "
                f"but source retention may delete its oldest records in {e.retention_left_s:,.0f}s;"
                " raise retention.ms on the source first"
            )


def wave_estimates(
    plan: Plan, estimates: list[TopicEstimate], mirror_rate: float
) -> list[WaveEstimate]:
    """Per wave of ``plan`` with topics among ``estimates``: its copy time at
    ``mirror_rate`` and its catch-up time with the waves before it still mirrored."""
    found = {e.topic: e for e in estimates}
    done: list[WaveEstimate] = []
    before = 0.0  # producers' rate into earlier waves: the mirror keeps copying it
    for wave in plan.waves:
        mine = [found[t] for t in wave.topics if t in found]
        if not mine:
            continue
        backlog = sum(e.backlog for e in mine)
        incoming = sum(e.incoming_per_s for e in mine)
        spare = mirror_rate - before - incoming
        done.append(
            WaveEstimate(
                wave.number,
                len(wave.topics),
                len(wave.groups),
                backlog,
                incoming,
                backlog / mirror_rate,
                backlog / spare if spare > 0 else None,
            )
        )
        before += incoming
    return done


def _wave_topics(plan: Plan, number: int) -> list[str]:
    return next(w.topics for w in plan.waves if w.number == number)


def _retention_left(source: ClusterAdmin, topic: str, configs: dict[str, str]) -> float | None:
    """Seconds until source retention may delete the topic's oldest record (None: never,
    or the topic is empty)."""
    if "delete" not in configs.get("cleanup.policy", "delete"):
        return None
    retention = int(configs.get("retention.ms", DEFAULT_RETENTION_MS))
    if retention < 0:
        return None
    # The first record at or after time 0 is each partition's first record: one
    # ListOffsets for the topic answers its timestamp, where reading it took a consumer
    # per partition.
    stamps = [
        o.timestamp
        for o in source.offsets_for_timestamp(topic, 0)
        if o.timestamp is not None and o.timestamp >= 0
    ]
    if not stamps:
        return None
    return max(retention - (time.time() * 1000 - min(stamps)), 0) / 1000

"""The migration plan: the YAML document an operator reviews and edits before anything runs.

`plan new` writes it from what both clusters hold now; `plan check` and `migrate start`
read it back. Validation errors name the field, never its value.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kmigrate.config import read_user_file
from kmigrate.documents import yaml_mapping
from kmigrate.errors import ConfigError
from kmigrate.model.cluster import AclEntry
from kmigrate.model.links import check_link_name
from kmigrate.model.migrations import SwitchOrder

HEADER = """\
# kmigrate migration plan. Review and edit it (drop topics or groups, change the switch
# order or the in-sync threshold), then:  kmigrate plan check {path}
#                                          kmigrate migrate start {path}
# members and lag are what the clusters showed when the plan was written.
# waves (when there is more than one): run them one at a time (migrate start {path} --wave N,
# then the steps with --wave N). A topic dropped from topics must go from its wave too, and
# a topic added must join one; a group's topics stay in one wave.
"""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# Kafka's rule for topic names: 1-249 of [a-zA-Z0-9._-], not "." or "..".
TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


class PlannedTopic(_Strict):
    name: str
    partitions: int = Field(gt=0)
    configs: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _kafka_name(cls, value: str) -> str:
        if value in (".", "..") or not TOPIC_NAME.fullmatch(value):
            raise ValueError(
                "not a valid Kafka topic name: use 1-249 characters from a-z A-Z 0-9 . _ -"
            )
        return value


class PlannedGroup(_Strict):
    name: str
    topics: list[str]
    members: int = 0
    lag: int = 0


class PlannedAcl(_Strict):
    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str = "*"
    operation: str
    permission: str

    def entry(self) -> AclEntry:
        return AclEntry(**self.model_dump(exclude={"reason"}))


class SkippedAcl(PlannedAcl):
    reason: str


class QuotaEntity(_Strict):
    type: Literal["user", "client-id", "ip"]
    name: str | None = None  # None: the default of that kind


class PlannedQuota(_Strict):
    """One client-quota entity and its values, set on the target by `migrate start`."""

    entity: list[QuotaEntity] = Field(min_length=1, max_length=2)
    values: dict[str, float] = Field(min_length=1)

    def key(self) -> tuple[tuple[str, str | None], ...]:
        return tuple((e.type, e.name) for e in self.entity)


class PlannedSchemas(_Strict):
    """Whether `migrate start` copies the source's Schema Registry to the target's, with
    the same ids (both clusters name a registry in clusters.yaml)."""

    enabled: bool = True
    # What the source's registry held when the plan was written (for review).
    subjects: int = Field(default=0, ge=0)
    versions: int = Field(default=0, ge=0)


class PlannedWave(_Strict):
    number: int = Field(gt=0)
    topics: list[str] = Field(min_length=1)
    groups: list[str] = Field(default_factory=list)
    # Estimates when the plan was written (how: wave_sizing).
    bytes: int = Field(default=0, ge=0)
    records: int = Field(default=0, ge=0)
    copy_s: float = Field(default=0.0, ge=0)
    # Why this wave is over the bounds: one group's topics, which never split.
    over_bounds: str | None = None


class WaveSizing(_Strict):
    """How the waves were cut: their bounds, and where the estimates came from."""

    max_bytes: int = Field(gt=0)
    max_copy_s: float = Field(gt=0)
    mirror_rate: float = Field(gt=0)  # records/s the copy times assume
    rate_from: Literal["measured", "given", "assumed"]
    # "log-dirs": the partitions' bytes on the source's disks (largest replica); else it
    # says which topics were estimated as records (high - low watermark) times an
    # average record size, sampled from the topics (or assumed when none was readable).
    bytes_from: str


class Plan(_Strict):
    name: str
    source: str
    target: str
    switch_order: SwitchOrder = SwitchOrder.CONSUMERS_FIRST
    # A topic is IN_SYNC while the mirror is at most this many records behind the source.
    in_sync_lag: int = Field(default=1000, ge=0)
    # promote waits until the source end offsets stood still this long (producers stopped).
    quiet_period_s: float = Field(default=10.0, ge=0)
    # Clients use the kmigrate gateway (group home: the target) from the start: writes
    # go on through promote, which fences them at the gateway instead of a quiet period.
    via_gateway: bool = False
    topics: list[PlannedTopic]
    groups: list[PlannedGroup] = Field(default_factory=list)
    acls: list[PlannedAcl] = Field(default_factory=list)
    acls_not_copied: list[SkippedAcl] = Field(default_factory=list)
    quotas: list[PlannedQuota] = Field(default_factory=list)
    quotas_not_copied: list[str] = Field(default_factory=list)
    schemas: PlannedSchemas | None = None
    # Optional (plans written before waves, or that fit in one, have none).
    wave_sizing: WaveSizing | None = None
    waves: list[PlannedWave] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_link_name(value)

    def topic_names(self) -> list[str]:
        return [t.name for t in self.topics]

    def groups_of(self, topic: str) -> list[str]:
        return [g.name for g in self.groups if topic in g.topics]

    def group(self, name: str) -> PlannedGroup | None:
        return next((g for g in self.groups if g.name == name), None)

    def topics_regex(self, names: list[str]) -> str:
        """The link's whole-name regex for exactly ``names`` (matches nothing when empty)."""
        if not names:
            return "(?!)"
        return "|".join(re.escape(n) for n in sorted(names))

    def to_yaml(self, path: str = "plan.yaml") -> str:
        body = self.model_dump(mode="json")
        return HEADER.format(path=path) + yaml.safe_dump(body, sort_keys=False, width=100)


def parse_plan(text: str, where: str) -> Plan:
    raw = yaml_mapping(text, where, "a plan is a mapping with name, source, target and topics")
    try:
        plan = Plan.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{where}: {_describe(exc)}") from None
    _check_consistent(plan, where)
    return plan


def load_plan(path: Path) -> Plan:
    """The plan in ``path``; a file that is missing, not text or not a plan is one line
    naming it (exit 2)."""
    return parse_plan(read_user_file(path, "plan"), str(path))


def _check_consistent(plan: Plan, where: str) -> None:
    names = plan.topic_names()
    if not names:
        raise ConfigError(f"{where}: the plan has no topics")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"{where}: topic {dupes[0]} is listed twice")
    for g in plan.groups:
        stray = [t for t in g.topics if t not in names]
        if stray:
            raise ConfigError(
                f"{where}: group {g.name} reads {stray[0]}, which is not among the plan's "
                "topics; add the topic or drop the group"
            )
    if plan.source == plan.target:
        raise ConfigError(f"{where}: source and target are the same cluster")
    if plan.waves:
        _check_waves(plan, where)
    if plan.via_gateway and plan.switch_order is not SwitchOrder.CONSUMERS_FIRST:
        raise ConfigError(
            f"{where}: via_gateway migrations switch consumers first (producers never stop); "
            "set switch_order: consumers-first"
        )


def _check_waves(plan: Plan, where: str) -> None:
    """Waves number 1..n, hold every planned topic once, and keep each group's topics
    (and the group) in one wave."""
    numbers = [w.number for w in plan.waves]
    if numbers != list(range(1, len(numbers) + 1)):
        raise ConfigError(f"{where}: waves must be numbered 1, 2, 3, ... in order")
    names = set(plan.topic_names())
    wave_of: dict[str, int] = {}
    for w in plan.waves:
        for topic in w.topics:
            if topic not in names:
                raise ConfigError(
                    f"{where}: wave {w.number} lists topic {topic}, which is not among the "
                    "plan's topics; drop it from the wave or add the topic"
                )
            if topic in wave_of:
                raise ConfigError(
                    f"{where}: topic {topic} is in waves {wave_of[topic]} and {w.number}"
                )
            wave_of[topic] = w.number
    missing = sorted(names - set(wave_of))
    if missing:
        raise ConfigError(f"{where}: topic {missing[0]} is in no wave; add it to one")
    _check_wave_groups(plan, where, wave_of)


def _check_wave_groups(plan: Plan, where: str, wave_of: dict[str, int]) -> None:
    listed: dict[str, list[int]] = {}
    for w in plan.waves:
        for name in w.groups:
            listed.setdefault(name, []).append(w.number)
            if plan.group(name) is None:
                raise ConfigError(
                    f"{where}: wave {w.number} lists group {name}, which is not among the "
                    "plan's groups"
                )
    for g in plan.groups:
        waves = sorted({wave_of[t] for t in g.topics})
        if len(waves) > 1:
            raise ConfigError(
                f"{where}: group {g.name} reads topics of waves {waves[0]} and {waves[1]}; "
                "a group's topics move in one wave"
            )
        if waves and listed.get(g.name) != waves:
            raise ConfigError(
                f"{where}: group {g.name} reads wave {waves[0]}'s topics; list it there "
                "(and in no other wave)"
            )


def _describe(exc: ValidationError) -> str:
    errors = exc.errors(include_input=False, include_url=False)
    first = errors[0]
    loc = ".".join(str(p) for p in first["loc"]) or "(top level)"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{loc}: {first['msg'].lower()}{more}"


def plan_document(plan: Plan) -> dict[str, Any]:
    return plan.model_dump(mode="json")

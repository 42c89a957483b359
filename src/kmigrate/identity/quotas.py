"""Which client quotas a copy writes on the target, and how two clusters' quotas differ
(pure).

Every entity with a quota on the source is copied with its values. On the target a value
the source also sets is overwritten; entities and values only the target has are left
alone and listed, never deleted: the target may serve other clients already.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kmigrate.identity.principals import PrincipalMap
from kmigrate.model.quotas import Entity, entity_text

Quotas = Mapping[Entity, Mapping[str, float]]


@dataclass(frozen=True)
class QuotaPlan:
    writes: dict[Entity, dict[str, float]]  # values to set on the target, per entity
    same: list[Entity]  # entities the target already has exactly
    only_target: dict[Entity, dict[str, float]]  # values only the target sets: left alone

    @property
    def empty(self) -> bool:
        return not self.writes


def plan_quotas(source: Quotas, target: Quotas) -> QuotaPlan:
    writes: dict[Entity, dict[str, float]] = {}
    same: list[Entity] = []
    for entity, values in sorted(source.items(), key=lambda item: _key(item[0])):
        there = target.get(entity, {})
        changed = {k: v for k, v in values.items() if there.get(k) != v}
        if changed:
            writes[entity] = dict(sorted(changed.items()))
        else:
            same.append(entity)
    only: dict[Entity, dict[str, float]] = {}
    for entity, values in sorted(target.items(), key=lambda item: _key(item[0])):
        extra = {k: v for k, v in values.items() if k not in source.get(entity, {})}
        if extra:
            only[entity] = dict(sorted(extra.items()))
    return QuotaPlan(writes, same, only)


def remapped(source: Quotas, principals: PrincipalMap) -> tuple[Quotas, list[str]]:
    """The source's quotas with user names as the target knows them, and one line per
    entity the map gives no user on the target (not copied)."""
    if principals.empty:
        return source, []
    out: dict[Entity, Mapping[str, float]] = {}
    lost = []
    for entity, values in source.items():
        renamed: list[tuple[str, str | None]] = []
        for kind, name in entity:
            target_name = principals.user(name) if kind == "user" and name is not None else name
            if kind == "user" and name is not None and target_name is None:
                lost.append(f"{entity_text(entity)}: the principal map gives User:{name} "
                            "no user on the target; not copied")  # fmt: skip
                break
            renamed.append((kind, target_name))
        else:
            out[tuple(renamed)] = values
    return out, lost


def differences(source: Quotas, target: Quotas) -> list[str]:
    """One line per value the target does not hold as the source does (values only the
    target sets are not differences: a copy leaves them)."""
    lines = []
    for entity, values in sorted(source.items(), key=lambda item: _key(item[0])):
        there = target.get(entity, {})
        for key, value in sorted(values.items()):
            if key not in there:
                lines.append(f"{entity_text(entity)}: {key} {number(value)} is not on the target")
            elif there[key] != value:
                lines.append(
                    f"{entity_text(entity)}: {key} is {number(value)} on the source, "
                    f"{number(there[key])} on the target"
                )
    return lines


def number(value: float) -> str:
    """1048576.0 -> "1048576", 0.5 -> "0.5"."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _key(entity: Entity) -> tuple[tuple[str, str], ...]:
    """Entities in a stable order, defaults (None) first."""
    return tuple((kind, "" if name is None else f"~{name}") for kind, name in entity)

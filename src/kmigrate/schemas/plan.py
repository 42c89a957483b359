"""What a schema copy writes on the target registry, what stops it, and how two
registries differ (pure).

Records carry a schema's id (a magic byte 0, then 4 bytes), so the target must give
every copied schema the id it has on the source: each version is registered with its
own id and version number, references before the versions that use them. A copy
refuses, before writing anything, a target that holds another schema under one of the
ids, another id or schema under one of the subject versions, or the same schema under
another id (the registry would answer with that id, not the source's).

Subject-level compatibility and modes follow the source. The global compatibility
follows it too; the global mode is the target's own (it says whether the target takes
writes, which is the operator's call during a migration).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kmigrate.model.schemas import Schema, SchemaVersion, same_schema, schema_key

IMPORT = "IMPORT"


@dataclass(frozen=True)
class RegistryView:
    """What one registry holds: versions and the settings a copy carries over."""

    versions: tuple[SchemaVersion, ...]
    global_compatibility: str | None = None
    compatibility: Mapping[str, str] = field(default_factory=dict)  # subject-level
    modes: Mapping[str, str] = field(default_factory=dict)  # subject-level

    @property
    def subjects(self) -> list[str]:
        return sorted({v.subject for v in self.versions})

    def by_id(self) -> dict[int, Schema]:
        return {v.id: v.schema for v in self.versions}


@dataclass(frozen=True)
class CopyPlan:
    register: list[SchemaVersion]  # in an order where references come first
    delete: list[SchemaVersion]  # soft-deleted on the source: deleted again once registered
    present: int  # versions the target already holds as the source does
    conflicts: list[str]  # one line each; any conflict: nothing is written
    compatibility: dict[str | None, str]  # subject (None: global) -> level to set
    modes: dict[str, str | None]  # subject -> its own mode once copied (None: none)
    not_copied: list[str]  # settings left out, and why

    @property
    def importing(self) -> list[str]:
        """The subjects put in IMPORT mode while their versions are written."""
        return sorted({v.subject for v in self.register} | {v.subject for v in self.delete})

    @property
    def empty(self) -> bool:
        return not (self.register or self.delete or self.compatibility or self.modes)


def plan_copy(source: RegistryView, target: RegistryView) -> CopyPlan:
    there = {(v.subject, v.version): v for v in target.versions}
    target_ids = target.by_id()
    target_keys = {schema_key(v.schema): v.id for v in target.versions}
    conflicts: list[str] = []
    wanted: list[SchemaVersion] = []
    redelete: list[SchemaVersion] = []
    present = 0
    for version in source.versions:
        where = f"subject {version.subject} version {version.version} (id {version.id})"
        held = there.get((version.subject, version.version))
        if held is not None:
            if held.id != version.id or not same_schema(held.schema, version.schema):
                conflicts.append(
                    f"{where}: the target holds "
                    + (f"id {held.id} there" if held.id != version.id else "another schema there")
                )
            else:
                present += 1
                if version.deleted and not held.deleted:
                    redelete.append(version)
            continue
        other = target_ids.get(version.id)
        if other is not None and not same_schema(other, version.schema):
            conflicts.append(f"{where}: the target holds another schema under id {version.id}")
            continue
        if other is None:
            twin = target_keys.get(schema_key(version.schema))
            if twin is not None:
                conflicts.append(
                    f"{where}: the target holds the same schema under id {twin}; it would "
                    f"answer with id {twin}, and records carrying id {version.id} would not "
                    "resolve"
                )
                continue
        wanted.append(version)
    ordered, unresolved = _references_first(wanted, set(there))
    conflicts += unresolved
    compatibility, modes, not_copied = _settings(source, target, ordered)
    return CopyPlan(
        register=ordered,
        delete=[v for v in ordered if v.deleted] + redelete,
        present=present,
        conflicts=conflicts,
        compatibility=compatibility,
        modes=modes,
        not_copied=not_copied,
    )


def _references_first(
    wanted: list[SchemaVersion], on_target: set[tuple[str, int]]
) -> tuple[list[SchemaVersion], list[str]]:
    """``wanted`` ordered so each version's references are registered (or held) before
    it; one line per version whose reference neither the copy nor the target has."""
    pending = sorted(wanted, key=lambda v: (v.subject, v.version))
    done = set(on_target)
    ordered: list[SchemaVersion] = []
    while pending:
        ready = [
            v for v in pending if all((r.subject, r.version) in done for r in v.schema.references)
        ]
        if not ready:
            break
        ordered += ready
        done |= {(v.subject, v.version) for v in ready}
        pending = [v for v in pending if (v.subject, v.version) not in done]
    missing = [
        f"subject {v.subject} version {v.version} (id {v.id}): its reference "
        + ", ".join(
            f"{r.subject} version {r.version}"
            for r in v.schema.references
            if (r.subject, r.version) not in done
        )
        + " is on neither registry"
        for v in pending
    ]
    return ordered, missing


def _settings(
    source: RegistryView, target: RegistryView, written: list[SchemaVersion]
) -> tuple[dict[str | None, str], dict[str, str | None], list[str]]:
    compatibility: dict[str | None, str] = {}
    if source.global_compatibility and source.global_compatibility != target.global_compatibility:
        compatibility[None] = source.global_compatibility
    for subject, level in sorted(source.compatibility.items()):
        if target.compatibility.get(subject) != level:
            compatibility[subject] = level
    modes: dict[str, str | None] = {}
    not_copied = []
    imported = {v.subject for v in written}
    for subject in source.subjects:
        mode = source.modes.get(subject)
        if mode == IMPORT:
            not_copied.append(
                f"subject {subject} is in IMPORT mode on the source: not copied (producers "
                "could not register there); it keeps the target's global mode"
            )
            mode = None
        if subject in imported or target.modes.get(subject) != mode:
            modes[subject] = mode
    return compatibility, modes, not_copied


def differences(source: RegistryView, target: RegistryView) -> list[str]:
    """One line per thing the target does not hold as the source does (subjects and
    versions only the target has are not differences)."""
    there = {(v.subject, v.version): v for v in target.versions}
    lines = []
    for version in source.versions:
        where = f"subject {version.subject} version {version.version}"
        held = there.get((version.subject, version.version))
        if held is None:
            lines.append(f"{where} (id {version.id}) is not on the target")
        elif held.id != version.id:
            lines.append(f"{where} has id {version.id} on the source, {held.id} on the target")
        elif not same_schema(held.schema, version.schema):
            lines.append(f"{where} (id {version.id}) holds another schema on the target")
        elif held.deleted != version.deleted:
            state = "deleted" if version.deleted else "live"
            lines.append(f"{where} (id {version.id}) is {state} on the source, not the target")
    compatibility, modes, _ = _settings(source, target, [])
    for subject, level in compatibility.items():
        name = "global compatibility" if subject is None else f"subject {subject} compatibility"
        have = target.global_compatibility if subject is None else target.compatibility.get(subject)
        lines.append(f"{name} is {level} on the source, {have or 'not set'} on the target")
    for subject, mode in modes.items():
        lines.append(
            f"subject {subject} mode is {mode or 'not set'} on the source, "
            f"{target.modes.get(subject) or 'not set'} on the target"
        )
    return lines

"""Reading a registry's contents, and writing a copy plan on the target.

The subjects a copy writes are put in IMPORT mode, one by one, and only they: other
subjects of a target that already serves producers keep taking registrations. Each is
given its final mode (the source's subject-level mode, or none) once written, also when
the copy fails part-way. Every step is idempotent, so a copy killed at any moment is
finished by running it again: versions already there are recognised, and a subject left
in IMPORT mode gets its final mode then.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from kmigrate.errors import ConflictError
from kmigrate.schema_registry.client import SchemaRegistry
from kmigrate.schemas.plan import IMPORT, CopyPlan, RegistryView

Progress = Callable[[str], None]
_READERS = 8


def read_view(registry: SchemaRegistry) -> RegistryView:
    """Every version, and the global and subject-level settings, of ``registry``."""
    versions = registry.versions()
    subjects = sorted({v.subject for v in versions})
    with ThreadPoolExecutor(_READERS) as pool:
        levels = dict(zip(subjects, pool.map(registry.compatibility, subjects), strict=True))
        modes = dict(zip(subjects, pool.map(registry.mode, subjects), strict=True))
    return RegistryView(
        tuple(versions),
        registry.compatibility(),
        {s: level for s, level in levels.items() if level},
        {s: mode for s, mode in modes.items() if mode},
    )


def apply(target: SchemaRegistry, plan: CopyPlan, progress: Progress) -> None:
    """Write ``plan`` (which must hold no conflict) on ``target``."""
    assert not plan.conflicts, "a plan with conflicts is refused before anything is written"
    importing = plan.importing
    try:
        for subject in importing:
            target.set_mode(IMPORT, subject)
        for done, version in enumerate(plan.register, 1):
            answered = target.register(version)
            if answered != version.id:
                raise ConflictError(
                    f"the target registered subject {version.subject} version "
                    f"{version.version} under id {answered}, not {version.id}: it holds the "
                    "same schema under that id; records carrying the source's id would not "
                    "resolve there"
                )
            if done % 100 == 0:
                progress(f"registered {done:,} of {len(plan.register):,} version(s)")
        for version in plan.delete:
            target.delete_version(version.subject, version.version)
    finally:
        for subject in importing:
            target.set_mode(plan.modes.get(subject), subject)
    for where, level in plan.compatibility.items():
        target.set_compatibility(level, where)
    for subject, mode in plan.modes.items():
        if subject not in importing:
            target.set_mode(mode, subject)

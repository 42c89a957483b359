"""Two clusters' Schema Registries, by the clusters that name them: what one holds, the
copy planned from one to the other, the copy carried out and read back, and how they
differ. `kmigrate schemas` and the guided migration (plan, check, start) all go through
here, so a copy is planned, refused and written one way."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kmigrate.config import ClusterConfig
from kmigrate.schema_registry.client import SchemaRegistry
from kmigrate.schemas.copy import apply, read_view
from kmigrate.schemas.plan import CopyPlan, RegistryView, differences, plan_copy


@dataclass(frozen=True)
class Planned:
    wanted: RegistryView  # the source's registry as read
    plan: CopyPlan  # what the target lacks of it (and what conflicts)


def read_registry(cluster: ClusterConfig) -> RegistryView:
    """Every version and setting of the registry ``cluster`` names (ConfigError if it
    names none)."""
    return read_view(SchemaRegistry(cluster))


def planned(source: ClusterConfig, target: ClusterConfig) -> Planned:
    """Both registries read (both must be named), and the copy from one to the other."""
    registries = SchemaRegistry(source), SchemaRegistry(target)
    wanted = read_view(registries[0])
    return Planned(wanted, plan_copy(wanted, read_view(registries[1])))


def carry_out(target: ClusterConfig, plan: CopyPlan, progress: Callable[[str], None]) -> None:
    """Write ``plan``, which must hold no conflict, on the target's registry."""
    if not plan.empty:
        apply(SchemaRegistry(target), plan, progress)


def differences_between(wanted: RegistryView, target: ClusterConfig) -> list[str]:
    """What the target's registry (read now) lacks of ``wanted``, one line each."""
    return differences(wanted, read_view(SchemaRegistry(target)))


def compared(source: ClusterConfig, target: ClusterConfig) -> list[str]:
    """How the target's registry differs from the source's; [] when it holds it all."""
    registries = SchemaRegistry(source), SchemaRegistry(target)  # both named, or refused
    return differences(read_view(registries[0]), read_view(registries[1]))

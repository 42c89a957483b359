"""SCRAM users between two clusters, through the Kafka admin layer: read a cluster's,
and create on a target the source's users it lacks, each with the mechanism and
iterations it has on the source and its password from the operator's file (Kafka never
returns one). The plan is `identity.users`; `kmigrate users` copies through here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kmigrate.config import ClusterConfig
from kmigrate.identity.users import Credential, UserPlan, credentials, plan_users
from kmigrate.kafka.admin import ClusterAdmin


@dataclass(frozen=True)
class UsersCopied:
    plan: UserPlan
    missing_after: list[Credential]  # written, yet not described by the target afterwards


def read_users(cluster: ClusterConfig) -> list[Credential]:
    """Every SCRAM user of ``cluster`` with its mechanisms and iterations."""
    with ClusterAdmin(cluster) as admin:
        return credentials(admin.scram_credentials())


def copy_users(
    source: ClusterConfig,
    target: ClusterConfig,
    passwords: Mapping[str, str],
    *,
    replace: bool,
    dry_run: bool,
) -> UsersCopied:
    """Create on ``target`` what the plan says (nothing with ``dry_run``), then read the
    target back: a user it does not describe afterwards is reported, not assumed."""
    with ClusterAdmin(source) as s, ClusterAdmin(target) as t:
        plan = plan_users(s.scram_credentials(), t.scram_credentials(), passwords, replace=replace)
        if dry_run:
            return UsersCopied(plan, [])
        for c in plan.create:
            t.upsert_scram_credential(c.user, c.mechanism, c.iterations, passwords[c.user])
        held = {(c.user, c.mechanism) for c in credentials(t.scram_credentials())}
    return UsersCopied(plan, [c for c in plan.create if (c.user, c.mechanism) not in held])

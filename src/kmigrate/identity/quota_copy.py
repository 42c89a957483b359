"""Client quotas between two clusters, through the Kafka admin layer: read a cluster's,
and set on a target what it lacks of a wanted set (the plan is `identity.quotas`).
`kmigrate quotas` and the guided migration's start both copy through here."""

from __future__ import annotations

from kmigrate.config import ClusterConfig
from kmigrate.identity.quotas import QuotaPlan, Quotas, plan_quotas
from kmigrate.kafka.quotas import ClientQuotas
from kmigrate.model.quotas import Entity


def read_quotas(cluster: ClusterConfig) -> dict[Entity, dict[str, float]]:
    """Every entity with a client quota on ``cluster``, and its values."""
    with ClientQuotas(cluster) as quotas:
        return quotas.describe()


def set_missing(target: ClusterConfig, wanted: Quotas) -> QuotaPlan:
    """Set on ``target`` each value of ``wanted`` it does not hold yet (values only the
    target sets are left alone); the plan that was carried out. Idempotent: run again,
    it writes nothing."""
    with ClientQuotas(target) as quotas:
        plan = plan_quotas(wanted, quotas.describe())
        if not plan.empty:
            quotas.alter(plan.writes)
    return plan

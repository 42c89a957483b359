"""Which topic configs travel with a topic to another cluster, and how they adapt.

Pure logic, tested without a broker: the admin layer applies the result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# Configs that describe the data (retention, compaction, size limits, timestamps) and so
# must match on the target. Placement and throttle configs belong to the target cluster.
COPYABLE_TOPIC_CONFIGS: frozenset[str] = frozenset(
    {
        "cleanup.policy",
        "compression.type",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
        "delete.retention.ms",
        "max.compaction.lag.ms",
        "max.message.bytes",
        "message.timestamp.type",
        "message.timestamp.after.max.ms",
        "message.timestamp.before.max.ms",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "min.insync.replicas",
        "retention.bytes",
        "retention.ms",
        "segment.bytes",
        "segment.ms",
        "segment.index.bytes",
        "index.interval.bytes",
    }
)


def configs_to_copy(
    source_configs: Mapping[str, str],
    replication_factor: int,
    *,
    only: Iterable[str] | None = None,
    overrides: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The configs to create the copy with.

    Takes the source's non-default configs that are copyable (or only those named in
    ``only``), applies ``overrides``, and caps min.insync.replicas at the target's
    replication factor so the copy stays writable with acks=all.
    """
    allowed = COPYABLE_TOPIC_CONFIGS if only is None else frozenset(only)
    chosen = {k: v for k, v in source_configs.items() if k in allowed}
    chosen.update(overrides or {})
    min_isr = chosen.get("min.insync.replicas")
    if min_isr is not None and min_isr.isdigit() and int(min_isr) > replication_factor:
        chosen["min.insync.replicas"] = str(replication_factor)
    return chosen

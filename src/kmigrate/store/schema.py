"""Tables of the metadata store."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData()

links = Table(
    "links",
    metadata,
    Column("name", String(100), primary_key=True),
    Column("source", String(200), nullable=False),
    Column("target", String(200), nullable=False),
    Column("topics", Text, nullable=False),
    Column("start", String(40), nullable=False),
    Column("replication_factor", Integer),
    Column("created_ms", BigInteger, nullable=False),
)

link_topics = Table(
    "link_topics",
    metadata,
    Column("link", String(100), ForeignKey("links.name"), primary_key=True),
    Column("topic", String(255), primary_key=True),
    Column("partitions", Integer, nullable=False),
    Column("state", String(20), nullable=False),
    Column("updated_ms", BigInteger, nullable=False),
)

# One row per mirrored partition: the offset map's header and progress counters.
map_partitions = Table(
    "map_partitions",
    metadata,
    Column("link", String(100), primary_key=True),
    Column("topic", String(255), primary_key=True),
    Column("partition", Integer, primary_key=True),
    Column("source_start", BigInteger, nullable=False),
    Column("source_next", BigInteger, nullable=False),
    Column("target_start", BigInteger, nullable=False),
    Column("mirrored", BigInteger, nullable=False),
    Column("last_timestamp", BigInteger),
    Column("records_per_s", Float, nullable=False, default=0.0),
    Column("updated_ms", BigInteger, nullable=False),
)

offset_runs = Table(
    "offset_runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("link", String(100), nullable=False),
    Column("topic", String(255), nullable=False),
    Column("partition", Integer, nullable=False),
    Column("source_start", BigInteger, nullable=False),
    Column("target_start", BigInteger, nullable=False),
    Column("length", BigInteger, nullable=False),
    Index("ix_offset_runs_partition", "link", "topic", "partition", "source_start"),
)

gaps = Table(
    "gaps",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("link", String(100), nullable=False),
    Column("topic", String(255), nullable=False),
    Column("partition", Integer, nullable=False),
    Column("source_start", BigInteger, nullable=False),
    Column("source_end", BigInteger, nullable=False),
    Column("reason", Text, nullable=False),
    Column("detected_ms", BigInteger, nullable=False),
)

mirror_runs = Table(
    "mirror_runs",
    metadata,
    Column("link", String(100), primary_key=True),
    Column("pid", Integer, nullable=False),
    Column("host", String(255), nullable=False),
    Column("state", String(20), nullable=False),
    Column("reason", Text),
    Column("started_ms", BigInteger, nullable=False),
    Column("heartbeat_ms", BigInteger, nullable=False),
    Column("records_per_s", Float, nullable=False),
    Column("log_path", Text),
    # Seconds the last batch took (read, write, commit); added after the first release.
    Column("batch_s", Float),
)

# The outage a link's mirror is waiting out, while it waits (a row only then).
mirror_waits = Table(
    "mirror_waits",
    metadata,
    Column("link", String(100), primary_key=True),
    Column("pid", Integer, nullable=False),
    Column("cluster", String(255), nullable=False),
    Column("role", String(20), nullable=False),
    Column("condition", Text, nullable=False),
    Column("since_ms", BigInteger, nullable=False),
)

# The last source commit kmigrate saw for each group partition, and what it committed on
# the target for it: failover translates from here when the source is unreachable, and
# a repeated migrate can tell "already done" from "the group moved on on the target".
group_positions = Table(
    "group_positions",
    metadata,
    Column("link", String(100), primary_key=True),
    Column("group_id", String(255), primary_key=True),
    Column("topic", String(255), primary_key=True),
    Column("partition", Integer, primary_key=True),
    Column("source_offset", BigInteger, nullable=False),
    Column("seen_ms", BigInteger, nullable=False),
    Column("target_offset", BigInteger),
    Column("committed_ms", BigInteger),
)

# A guided migration: the reviewed plan (as YAML) and its switch order.
migrations = Table(
    "migrations",
    metadata,
    Column("name", String(100), primary_key=True),
    Column("source", String(200), nullable=False),
    Column("target", String(200), nullable=False),
    Column("plan_yaml", Text, nullable=False),
    Column("created_ms", BigInteger, nullable=False),
)

# Per topic and per group: the step reached, and the step under way (None when idle).
# A `pending` step left behind by a killed command is what the next command resumes.
migration_items = Table(
    "migration_items",
    metadata,
    Column("migration", String(100), primary_key=True),
    Column("kind", String(10), primary_key=True),  # topic | group
    Column("name", String(255), primary_key=True),
    Column("state", String(20), nullable=False),
    Column("pending", String(20)),
    Column("pending_since_ms", BigInteger),
    Column("updated_ms", BigInteger, nullable=False),
)

# The audit log: every step, who ran it, and how it ended.
migration_events = Table(
    "migration_events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("migration", String(100), nullable=False),
    Column("at_ms", BigInteger, nullable=False),
    Column("actor", String(255), nullable=False),
    Column("action", String(40), nullable=False),
    Column("subjects", Text, nullable=False),
    Column("outcome", String(20), nullable=False),  # started | done | refused | failed
    Column("detail", Text),
    Index("ix_migration_events", "migration", "at_ms"),
)

# Phased operations (ensemble moves, KRaft conversions): one per kind and cluster, its
# plan and the phase reached. Stores older than this table kept them in `zk_moves`
# (KRaft conversions under a "kraft:" key); opening one copies them here.
operations = Table(
    "operations",
    metadata,
    Column("kind", String(40), primary_key=True),  # model.operations: ENSEMBLE_MOVE, ...
    Column("cluster", String(255), primary_key=True),
    Column("plan_yaml", Text, nullable=False),
    Column("phase", String(20), nullable=False),  # planned | <the kind's phases> | done ...
    Column("created_ms", BigInteger, nullable=False),
    Column("updated_ms", BigInteger, nullable=False),
)

# What each step of an operation did, in order (zk history, kraft history).
operation_events = Table(
    "operation_events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(40), nullable=False),
    Column("cluster", String(255), nullable=False),
    Column("at_ms", BigInteger, nullable=False),
    Column("phase", String(20), nullable=False),
    Column("step", String(80), nullable=False),
    Column("outcome", String(20), nullable=False),  # started | done | skipped | refused | failed
    Column("detail", Text),
    Index("ix_operation_events", "kind", "cluster", "at_ms"),
)

# At most one command acts on a subject (a cluster's ZooKeeper move, ...) at a time.
command_locks = Table(
    "command_locks",
    metadata,
    Column("subject", String(255), primary_key=True),  # e.g. "zk-move:legacy"
    Column("pid", Integer, nullable=False),
    Column("host", String(255), nullable=False),
    Column("command", String(200), nullable=False),
    Column("acquired_ms", BigInteger, nullable=False),
)

# Replica reassignments applied by kmigrate: one per cluster at a time, its plan, the
# throttles it set (so every run, resumed or cancelled, can remove them).
reassignments = Table(
    "reassignments",
    metadata,
    Column("cluster", String(255), primary_key=True),
    Column("plan_json", Text, nullable=False),
    Column("state", String(20), nullable=False),  # running | done | cancelled
    Column("rate", BigInteger, nullable=False),  # bytes/s per broker
    Column("max_moves", Integer, nullable=False),
    Column("throttled", Text, nullable=False),  # JSON: {"topics": [...], "brokers": [...]}
    Column("started_ms", BigInteger, nullable=False),
    Column("updated_ms", BigInteger, nullable=False),
)

reassignment_moves = Table(
    "reassignment_moves",
    metadata,
    Column("cluster", String(255), primary_key=True),
    Column("topic", String(255), primary_key=True),
    Column("partition", Integer, primary_key=True),
    Column("state", String(20), nullable=False),  # pending | moving | done | cancelled
    Column("updated_ms", BigInteger, nullable=False),
)

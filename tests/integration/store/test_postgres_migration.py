"""A guided migration whose metadata store is a real PostgreSQL server: the mirror,
group translation, states and audit log all live there, and its password never shows."""

from __future__ import annotations

from pathlib import Path

import yaml
from sqlalchemy.engine import make_url

from kmigrate.kafka.admin import ClusterAdmin
from tests.integration.conftest import Clusters
from tests.integration.migration.harness import new_migration
from tests.integration.mirror.harness import assert_exact_copy


def test_a_migration_runs_on_a_postgresql_store(
    clusters: Clusters, postgres_url: str, tmp_path: Path
) -> None:
    m = new_migration(clusters, tmp_path, records=3_000, partitions=3)
    raw = yaml.safe_load(m.config.read_text())
    raw["store"] = {"url": postgres_url}
    m.config.write_text(yaml.safe_dump(raw))
    password = make_url(postgres_url).password
    assert password
    outputs = []
    try:
        outputs.append(m.ok("migrate", "start", str(m.plan)))
        m.wait_topic("IN_SYNC")
        outputs.append(m.ok("migrate", "consumers", "--groups", m.group, "--wait"))
        outputs.append(m.ok("migrate", "promote", "--topics", m.topic))
        outputs.append(m.ok("migrate", "status"))
        outputs.append(m.ok("migrate", "history"))
        outputs.append(
            m.cli("migrate", "rollback", "--topics", m.topic, "--yes")
        )  # refused: after promote
    finally:
        m.stop_mirror()
    assert outputs[-1].code == 5
    status = m.status()
    assert [t["state"] for t in status["topics"]] == ["PROMOTED"]
    assert [g["state"] for g in status["groups"]] == ["MOVED"]
    # The group continues on the target exactly where it stopped on the source.
    with ClusterAdmin(clusters.target) as admin:
        committed = {(o.topic, o.partition): o.committed for o in admin.committed_offsets(m.group)}
    assert committed == {(m.topic, p): 3_000 // 9 for p in range(3)}
    assert assert_exact_copy(m.config, m.name, clusters.source, clusters.target, m.topic) == 3_000
    assert [(a, o) for a, o in m.outcomes() if o in ("done", "refused")] == [
        ("start", "done"),
        ("consumers", "done"),
        ("promote", "done"),
        ("rollback", "refused"),
    ]
    for result in outputs:
        assert password not in result.stdout + result.stderr
    log = (m.config.parent / ".kmigrate" / "links" / m.name / "mirror.log").read_text()
    assert password not in log

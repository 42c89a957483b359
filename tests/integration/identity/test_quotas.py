"""Client quotas copied between two real clusters: set on the source with Kafka's own
ConfigCommand (every entity kind, defaults too), copied by `kmigrate quotas copy`, read
back on the target with ConfigCommand; what only the target had stays, and a value
changed on the target afterwards is a difference `quotas compare` names (exit 1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.userview import _quotas, config_command, quotas
from kmigrate.kafka.quotas import ClientQuotas
from kmigrate.sandbox.jars import ensure_jars
from tests.integration.cli_contract.harness import Ran, run_in
from tests.integration.conftest import Clusters

TOOLS = "3.9.1"  # the last release whose jars still have kafka.admin.ConfigCommand


@pytest.fixture
def clean(clusters: Clusters) -> Iterator[None]:
    """The shared clusters left without any client quota, before and after."""

    def wipe() -> None:
        for cluster in (clusters.source, clusters.target):
            with ClientQuotas(cluster) as q:
                q.alter({e: dict.fromkeys(v) for e, v in q.describe().items()})

    wipe()
    yield
    wipe()


def test_quotas_arrive_on_the_target_as_kafkas_tool_reads_them(
    clusters: Clusters, clean: None, tmp_path: Path
) -> None:
    jars = ensure_jars(TOOLS)
    _quotas(jars, clusters.source)
    config_command(jars, clusters.target, "--alter", "--add-config", "consumer_byte_rate=777",
                   "--entity-type", "clients", "--entity-name", "target-only")  # fmt: skip
    with ClientQuotas(clusters.target) as on_target:
        before = on_target.describe()

    def kmigrate(*argv: str) -> Ran:
        return run_in(tmp_path, ["--config", str(clusters.config_path), *argv])

    pair = ("--source", clusters.source.name, "--target", clusters.target.name)
    dry = kmigrate("quotas", "copy", *pair, "--dry-run", "--json")
    assert dry.code == 0, dry.stderr
    assert len(json.loads(dry.stdout)["set"]) == 5
    with ClientQuotas(clusters.target) as on_target:
        assert on_target.describe() == before, "a dry run changes nothing"

    done = kmigrate("quotas", "copy", *pair, "--json")
    assert done.code == 0, done.stderr
    assert json.loads(done.stdout)["differences"] == []
    source, target = quotas(jars, clusters.source), quotas(jars, clusters.target)
    assert len(source) == 5
    assert {e: target.get(e) for e in source} == source
    only = target["client-id 'target-only'"]
    assert float(only["consumer_byte_rate"]) == 777, "what only the target had stays"

    same = kmigrate("quotas", "compare", *pair)
    assert same.code == 0, same.stdout + same.stderr
    config_command(jars, clusters.target, "--alter", "--add-config", "producer_byte_rate=1",
                   "--entity-type", "users", "--entity-name", "app-0")  # fmt: skip
    differs = kmigrate("quotas", "compare", *pair)
    assert differs.code == 1, differs.stdout + differs.stderr
    assert (
        "user 'app-0': producer_byte_rate is 1048576 on the source, 1 on the target"
        in differs.stdout
    )

"""`kmigrate zk plan` against real ensembles and a ZooKeeper-mode Kafka 3.9 cluster, as a
user runs it. One sandbox for the module: ensembles `old` (holding Kafka under /kafka)
and `new` (empty), 3 servers each, and cluster `legacy` on old/kafka."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.helpers import run_cli, unique
from kmigrate.config import load_settings
from kmigrate.ensemble_move.plan import load_plan
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.zookeeper.tree import digest, first_difference, read_tree
from tests.integration.ensemble_move.conftest import old_and_new


@pytest.fixture(scope="module")
def zk_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with old_and_new(tmp_path_factory, "zk") as directory:
        yield directory / "clusters.yaml"


def test_plan_checks_both_ensembles_and_writes_the_ordered_steps(
    zk_sandbox: Path, tmp_path: Path
) -> None:
    out = tmp_path / "move.yaml"
    result = run_cli(
        "zk", "plan", "--cluster", "legacy", "--source-ensemble", "old",
        "--target-ensemble", "new", "-o", str(out), "--json", config=str(zk_sandbox),
    )  # fmt: skip
    assert result.code == 0, result.stderr
    shown = json.loads(result.stdout)
    plan = load_plan(out)
    assert shown["join_first"] == plan.join_first
    assert plan.chroot == "/kafka", "the chroot comes from the brokers' zookeeper.connect"
    assert (plan.join_first, plan.join_after_split) == ([4, 5], [6])
    assert plan.brokers == [1]
    assert [s.phase for s in plan.steps] == ["join", "check", "switch", "split"]
    assert plan.target_connect.endswith("/kafka")
    # Nothing changed: the target is still empty, the source unchanged.
    again = run_cli(
        "zk", "plan", "--cluster", "legacy", "--source-ensemble", "old",
        "--target-ensemble", "new", "-o", str(out), "--force", config=str(zk_sandbox),
    )  # fmt: skip
    assert again.code == 0, again.stderr
    assert load_plan(out) == plan


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (
            ("--source-ensemble", "new", "--target-ensemble", "old"),
            5,
            "target ensemble 'old' is not empty",
        ),
        (
            ("--source-ensemble", "old", "--target-ensemble", "nowhere"),
            2,
            "unknown ZooKeeper ensemble 'nowhere'",
        ),
        (
            ("--source-ensemble", "old", "--target-ensemble", "new", "--chroot", "/other"),
            5,
            "not the source ensemble",
        ),
    ],
)
def test_refusals_are_one_line_and_write_nothing(
    zk_sandbox: Path, tmp_path: Path, args: tuple[str, ...], code: int, says: str
) -> None:
    out = tmp_path / "move.yaml"
    result = run_cli(
        "zk", "plan", "--cluster", "legacy", *args, "-o", str(out), config=str(zk_sandbox)
    )
    assert result.code == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], lines
    assert not out.exists()


def test_kafkas_tree_reads_the_same_on_every_server_and_any_change_shows(
    zk_sandbox: Path,
) -> None:
    """What the move's check compares (a source and a target server), on two servers of
    one ensemble: every path, data and ACL, counted and digested."""
    settings = load_settings(zk_sandbox)
    first, second, _ = settings.ensemble("old").connect.split(",")
    before = read_tree(first, "/kafka", "old")
    assert first_difference(before, read_tree(second, "/kafka", "old")) is None
    summary = digest("/kafka", before)
    assert summary == digest("/kafka", read_tree(second, "/kafka", "old"))
    assert summary.ephemeral >= 2, "the broker's registration and the controller"
    assert any(n.path == "/kafka/brokers/ids/1" and n.ephemeral for n in before)

    topic = unique("zktree")
    with ClusterAdmin(settings.cluster("legacy")) as admin:
        admin.create_topic(topic, 2)
    after = read_tree(second, "/kafka", "old")
    assert digest("/kafka", after) != summary
    assert first_difference(before, after) == f"/kafka/brokers/topics/{topic}"
    assert digest("/kafka", read_tree(first, "/kafka", "old")) == digest("/kafka", after)

"""A ZooKeeper-mode Kafka 3.9.1 cluster taken to KRaft by `kmigrate kraft`, on a sandbox
of its own (2 brokers talking PLAINTEXT, with Kafka's AclAuthorizer and
allow.everyone.if.no.acl.found=true; a 1-server ensemble), with an acks=all producer and
a consumer group running throughout:

* refusals: each changes nothing and says what to fix in one line;
* three controllers, `kraft migrate` SIGKILLed in roll 1 and resumed to dual-write,
  the quorum made to run many elections (KAFKA-20488), then `kraft revert` SIGKILLed at
  a seeded moment and run again: the cluster is a
  healthy ZooKeeper-mode cluster again (a broker is the controller, no /migration, no
  controller), its metadata as before, every acknowledged record read once, and a
  stopped leader's partitions elect the other replica.

A revert from roll 2 (every broker a KRaft broker: two more restarts each way) is swept
by bench/killpoints.py --operation kraft-revert (every boundary of `kraft revert`
killed; bench/README's kill-point table), not run here to keep CI's time.

The brokers give a quorum of three no super user (User:ANONYMOUS is none), so the plan
gives the controller listener kmigrate's own principal (kraft.trust). A full migration
of this shape, killed in each roll and finalized, is test_kraft_onprem's (the same
controller listener, with SCRAM clients).

Each kill is at a step boundary or a random moment after one, drawn by the kill-point
sweep's seeded chooser (harness/killpoints.py; the seed is printed, replay with
KMIGRATE_TEST_SEED); bench/killpoints.py kills at every boundary.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.helpers import seeded, unique, wait_for
from harness.killpoints import choose
from harness.killrun import kill_at_point, kmigrate
from kmigrate.config import ClusterConfig, load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce, read_partition
from kmigrate.kraft import snapshot
from kmigrate.kraft.plan import load_plan
from kmigrate.kraft.world import Znodes
from kmigrate.model.records import Record
from kmigrate.sandbox import manager, process
from kmigrate.sandbox.state import load_state
from tests.integration.conftest import Clusters
from tests.integration.kraft import live, quorum

CLUSTER = "legacy"
BROKERS = 2  # a roll of two shows what a roll of more would; the bench rolls three
# each roll's step boundaries (progress lines) a kill is drawn from
# a revert from dual-write: the controllers gone, the znodes, the brokers back to ZooKeeper
REVERT = [None, "revert: controller 3001", "revert: znodes", "revert: restarting broker 1",
          "revert: restarting broker 2"]  # fmt: skip


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("kraft").resolve()
    manager.up(
        directory,
        manager.UpRequest(clusters=[CLUSTER], brokers=BROKERS, zookeeper="zk/kafka", nodes=1),
    )
    try:
        live.furnish(load_settings(directory / "clusters.yaml").cluster(CLUSTER), BROKERS)
        yield directory
    finally:
        pids = [c.pid for c in load_state(directory).clusters[CLUSTER].controllers]
        manager.down(directory, purge=True, grace=5)
        assert not any(process.is_running(p) for p in pids), "sandbox down left a controller"


def _plan(config: Path, folder: Path, controllers: int = 1) -> Path:
    plan = folder / "kraft.yaml"
    planned = live.kraft(config, "plan", "--cluster", CLUSTER, "--controllers", str(controllers),
                     "-o", str(plan), "--force")  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    return plan


def test_refusals_say_what_to_fix_and_change_nothing(
    sandbox: Path, clusters: Clusters, tmp_path: Path
) -> None:
    config = sandbox / "clusters.yaml"
    kraft_mode = live.kraft(clusters.config_path, "plan", "--cluster", "source", "-o",
                        str(tmp_path / "p.yaml"))  # fmt: skip
    assert kraft_mode.returncode != 0
    assert "does not run in ZooKeeper mode" in kraft_mode.stderr
    assert kraft_mode.stderr.count("\n") == 1 and "Traceback" not in kraft_mode.stderr

    plan = _plan(config, tmp_path)
    exists = live.kraft(config, "plan", "--cluster", CLUSTER, "-o", str(plan))
    assert exists.returncode != 0 and "exists; pass --force" in exists.stderr
    early = live.kraft(config, "finalize", str(plan), "--yes")
    assert early.returncode != 0 and "every broker must be a KRaft broker first" in early.stderr
    (tmp_path / "bad.yaml").write_text("kafka: [")
    bad = live.kraft(config, "migrate", str(tmp_path / "bad.yaml"))
    assert bad.returncode == 2 and "bad YAML at line 1" in bad.stderr
    wrong = live.kraft(config, "plan", "--cluster", CLUSTER, "--controllers", "3", "--controller",
                   "127.0.0.1:1", "-o", str(tmp_path / "q.yaml"))  # fmt: skip
    assert wrong.returncode == 2 and "--controller given 1 time(s)" in wrong.stderr
    five = live.kraft(config, "plan", "--cluster", CLUSTER, "--controllers", "5", "-o",
                  str(tmp_path / "five.yaml"), "--json")  # fmt: skip
    assert five.returncode == 0, five.stderr
    planned = json.loads(five.stdout)
    secret = (tmp_path / "five.yaml.secret").read_text().strip()
    assert len(planned["controllers"]) == 5 and planned["controller_user"] == "kmigrate-controller"
    assert "User:kmigrate-controller" in planned["controller_listener"]
    assert secret and secret not in five.stdout + five.stderr + (tmp_path / "five.yaml").read_text()

    # nothing changed: every broker still in ZooKeeper mode, no controller provisioned
    assert load_state(sandbox).clusters[CLUSTER].controllers == ()
    found = Znodes.read(load_plan(plan).zookeeper_connect)
    assert found.registered == (1, 2) and found.migration is None


def test_a_revert_of_a_quorum_of_three_that_ran_many_elections_keeps_leaders_electable(
    sandbox: Path, tmp_path: Path
) -> None:
    """Three controllers (kmigrate's own principal on their listener), `kraft migrate`
    killed in roll 1 and resumed to dual-write, then KAFKA-20488: the quorum loses its
    majority for a while and comes back with an epoch far above ZooKeeper's; a topic
    with two replicas is made then, and the cluster reverted, `kraft revert` killed at a
    seeded moment and run again. The ZooKeeper-mode
    controller must then lead above that epoch: when a partition's leader stops, it
    elects the other replica (without the revert lifting `/controller_epoch`, it
    refuses partitions "written by another controller" and the partition stays
    leaderless). The cluster is a healthy ZooKeeper-mode cluster again, its metadata as
    before, every acknowledged record read once."""
    config = sandbox / "clusters.yaml"
    kafka = load_settings(config).cluster(CLUSTER)
    plan = _plan(config, tmp_path, controllers=3)
    log = tmp_path / "kraft.log"
    rng = seeded()
    with ClusterAdmin(kafka) as admin:
        before = snapshot.take(admin)
    with live.traffic(kafka, BROKERS) as (topic, traffic, group):
        live.killed_in(config, log, "roll1", rng, "migrate", str(plan))
        resumed = live.kraft(config, "migrate", str(plan), "--until", "dual-write")
        assert resumed.returncode == 0, resumed.stderr
        connect = load_plan(plan).zookeeper_connect
        found = Znodes.read(connect)
        assert found.controller_id in (3000, 3001, 3002) and found.metadata_offset >= 0
        status = json.loads(live.kraft(config, "status", "--cluster", CLUSTER, "--json").stdout)
        assert set(status["brokers"].values()) == {"migration"}, status

        kraft_epoch = quorum.strand(sandbox, CLUSTER, connect)
        electable = unique("epoch")
        with ClusterAdmin(kafka) as admin:  # its partition states carry the KRaft epoch
            admin.create_topic(electable, 2, replication_factor=BROKERS)
        point = choose(rng, REVERT, span_s=6.0)
        kill_at_point(kmigrate(config, "kraft", "revert", str(plan), "--yes"), log, point,
                      timeout_s=240)  # fmt: skip
        reverted = live.kraft(config, "revert", str(plan), "--yes")
        assert reverted.returncode == 0, reverted.stderr
        assert "runs in ZooKeeper mode as before" in reverted.stderr
        said = reverted.stderr + log.read_text()
        assert "(KAFKA-20488)" in said, said[-3000:]
    live.exactly_once(kafka, topic, traffic, group)

    zk_epoch, no_kraft = quorum.epochs(connect)
    assert no_kraft is None and zk_epoch > kraft_epoch
    found = Znodes.read(connect)
    assert found.controller_id in (1, 2) and found.migration is None
    assert found.registered == (1, 2)
    assert load_state(sandbox).clusters[CLUSTER].controllers == ()  # deprovisioned
    _leader_change_elects(sandbox, kafka, electable)
    status = json.loads(live.kraft(config, "status", "--cluster", CLUSTER, "--json").stdout)
    assert status["phase"] == "reverted" and set(status["brokers"].values()) == {"zk"}
    with ClusterAdmin(kafka) as admin:
        assert snapshot.differences(before, snapshot.take(admin)) == []


def _leader_change_elects(sandbox: Path, kafka: ClusterConfig, topic: str) -> None:
    """Stop the broker leading ``topic``'s partition 0: the other replica is elected,
    takes writes, and the broker rejoins (the cluster as before for the next test)."""
    with ClusterAdmin(kafka) as admin:
        leader = next(p.leader for p in admin.describe_topic(topic).partitions if p.partition == 0)
    assert leader in (1, 2)
    other = 3 - leader
    manager.stop_broker(sandbox, CLUSTER, leader, kill=False)
    try:

        def moved() -> bool:
            with ClusterAdmin(kafka) as admin:
                return all(p.leader == other for p in admin.describe_topic(topic).partitions)

        wait_for(moved, timeout=90, message=f"broker {other} elected leader of {topic}")
        sent = [Record(None, f"elected-{p}".encode(), partition=p) for p in range(2)]
        produce(kafka, topic, sent)
        read = [[r.value for r in read_partition(kafka, topic, p, 0, 1)] for p in range(2)]
        assert read == [[r.value] for r in sent]
    finally:
        manager.up(sandbox, manager.UpRequest(clusters=[CLUSTER], brokers=BROKERS,
                                              zookeeper="zk/kafka", nodes=1))  # fmt: skip

    def whole() -> bool:
        with ClusterAdmin(kafka) as admin:
            return not any(p.under_replicated for t in admin.list_topics() for p in t.partitions)

    wait_for(whole, timeout=120, message=f"broker {leader} back in every ISR")

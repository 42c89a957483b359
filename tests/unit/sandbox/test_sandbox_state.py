import json
from dataclasses import replace

from kmigrate.sandbox.state import (
    STATE_FILE,
    BrokerNode,
    RegistryNode,
    SandboxCluster,
    SandboxState,
    load_state,
)


def _cluster(name="source", secure=False, pids=(None, 4242, None)) -> SandboxCluster:
    brokers = tuple(
        BrokerNode(
            node_id=i + 1,
            port=19092 + i,
            controller_port=29092 + i,
            rack=f"rack-{i % 2}",
            voter=i < 2,
            pid=pid,
        )
        for i, pid in enumerate(pids)
    )
    return SandboxCluster(
        name=name, cluster_id=f"id-{name}", kafka_version="4.1.0", secure=secure, brokers=brokers
    )


def test_save_then_load_round_trips_clusters_and_brokers(tmp_path):
    state = (
        SandboxState(tmp_path)
        .with_cluster(_cluster("source"))
        .with_cluster(_cluster("target", secure=True, pids=(1, 2)))
    )
    state.save()
    loaded = load_state(tmp_path)
    assert loaded == state
    assert loaded.clusters["source"].brokers == state.clusters["source"].brokers
    assert isinstance(loaded.clusters["target"].brokers, tuple)


def test_round_trip_keeps_pid_none_and_set(tmp_path):
    SandboxState(tmp_path).with_cluster(_cluster(pids=(None, 31337))).save()
    brokers = load_state(tmp_path).clusters["source"].brokers
    assert brokers[0].pid is None
    assert brokers[1].pid == 31337


def test_round_trip_keeps_bootstrap_servers_and_voters(tmp_path):
    cluster = _cluster()
    SandboxState(tmp_path).with_cluster(cluster).save()
    loaded = load_state(tmp_path).clusters["source"]
    assert loaded.bootstrap_servers == "127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094"
    assert loaded.voters == "1@127.0.0.1:29092,2@127.0.0.1:29093"
    assert loaded.bootstrap_servers == cluster.bootstrap_servers
    assert loaded.voters == cluster.voters


def test_round_trip_keeps_cluster_fields(tmp_path):
    SandboxState(tmp_path).with_cluster(_cluster("t", secure=True)).save()
    loaded = load_state(tmp_path).clusters["t"]
    assert loaded.cluster_id == "id-t"
    assert loaded.kafka_version == "4.1.0"
    assert loaded.secure is True


def test_load_of_a_directory_without_state_is_empty(tmp_path):
    state = load_state(tmp_path / "nothing-here")
    assert state.clusters == {}
    assert state.directory == tmp_path / "nothing-here"


def test_save_creates_the_directory_and_leaves_no_temp_file(tmp_path):
    directory = tmp_path / "a" / "b"
    SandboxState(directory).with_cluster(_cluster()).save()
    assert sorted(p.name for p in directory.iterdir()) == [STATE_FILE]
    json.loads((directory / STATE_FILE).read_text())


def test_save_overwrites_previous_state(tmp_path):
    SandboxState(tmp_path).with_cluster(_cluster("old")).save()
    SandboxState(tmp_path).with_cluster(_cluster("new")).save()
    assert list(load_state(tmp_path).clusters) == ["new"]


def test_with_broker_replaces_only_the_matching_node():
    cluster = _cluster(pids=(None, None, None))
    updated = cluster.with_broker(
        BrokerNode(node_id=2, port=19093, controller_port=29093, rack="rack-1", voter=True, pid=7)
    )
    assert [b.pid for b in updated.brokers] == [None, 7, None]
    assert [b.pid for b in cluster.brokers] == [None, None, None]


def test_with_cluster_does_not_modify_the_original_state(tmp_path):
    original = SandboxState(tmp_path)
    updated = original.with_cluster(_cluster())
    assert original.clusters == {}
    assert list(updated.clusters) == ["source"]


def test_voters_only_lists_voter_nodes():
    cluster = _cluster(pids=(None,) * 5)
    assert [v.split("@")[0] for v in cluster.voters.split(",")] == ["1", "2"]


def test_round_trip_keeps_the_schema_registry(tmp_path):
    with_registry = replace(_cluster("source"), schema_registry=RegistryNode(18081, pid=777))
    SandboxState(tmp_path).with_cluster(with_registry).with_cluster(_cluster("target")).save()
    loaded = load_state(tmp_path)
    assert loaded.clusters["source"].schema_registry == RegistryNode(18081, pid=777)
    assert loaded.clusters["source"].schema_registry.url == "http://127.0.0.1:18081"
    assert loaded.clusters["target"].schema_registry is None


def test_a_state_file_written_before_schema_registries_still_loads(tmp_path):
    SandboxState(tmp_path).with_cluster(_cluster()).save()
    data = json.loads((tmp_path / STATE_FILE).read_text())
    del data["clusters"]["source"]["schema_registry"]
    (tmp_path / STATE_FILE).write_text(json.dumps(data))
    assert load_state(tmp_path).clusters["source"] == _cluster()

"""Schema Registry contents move with the data: Avro records written with confluent-kafka's
serializer on the source are mirrored, `schemas copy` gives every schema its source id on
the target's registry, and a consumer with the deserializer on the target reads every
record; verify finds a record whose schema id the target's registry lacks.

The registries are real (AxonOps Schema Registry, started by the sandbox); the session's
pair serves the end-to-end test, a fresh pair (no Kafka needed) each of the others.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema as ConfluentSchema
from confluent_kafka.schema_registry import SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from harness.helpers import run_cli, seeded, unique, wait_for
from kmigrate.config import ClusterConfig, load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.quotas import ClientQuotas
from kmigrate.kafka.records import read_partition
from kmigrate.migration.plan import load_plan
from kmigrate.model.schemas import Schema, SchemaVersion, framed_id
from kmigrate.net import free_ports
from kmigrate.sandbox import process
from kmigrate.sandbox import schema_registry as sandbox_registry
from kmigrate.schema_registry.client import SchemaRegistry
from tests.integration.cli_contract.harness import run_in
from tests.integration.conftest import Clusters
from tests.integration.migration.harness import commit_group, stop_mirror
from tests.integration.mirror.harness import mirror_config

PARTITIONS = 3


def _person(version: int) -> str:
    fields = [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]
    if version >= 2:
        fields.append({"name": "email", "type": ["null", "string"], "default": None})
    if version >= 3:
        fields.append({"name": "age", "type": "int", "default": 0})
    return json.dumps(
        {"type": "record", "name": "Person", "namespace": "kmigrate.test", "fields": fields}
    )


def _value(version: int, i: int) -> dict[str, Any]:
    value: dict[str, Any] = {"id": i, "name": f"person-{i}"}
    if version >= 2:
        value["email"] = f"p{i}@example.com" if i % 2 else None
    if version >= 3:
        value["age"] = i % 90
    return value


def _produce(cluster: ClusterConfig, topic: str, version: int, ids: range) -> dict[int, list[Any]]:
    """Avro values of schema ``version`` (registered by the serializer), spread over the
    partitions; what was acknowledged, per partition in send order."""
    assert cluster.schema_registry is not None
    registry = SchemaRegistryClient({"url": cluster.schema_registry.url})
    serialize = AvroSerializer(registry, _person(version))
    sent: dict[int, list[Any]] = {}
    failed: list[str] = []

    def acked(err: Any, msg: Any) -> None:
        if err is not None:
            failed.append(str(err))

    producer = Producer(cluster.as_librdkafka() | {"enable.idempotence": True})
    for i in ids:
        value = _value(version, i)
        data = serialize(value, SerializationContext(topic, MessageField.VALUE))
        producer.produce(
            topic, data, key=str(i).encode(), partition=i % PARTITIONS, on_delivery=acked
        )
        sent.setdefault(i % PARTITIONS, []).append(value)
    assert producer.flush(30) == 0 and not failed, failed
    return sent


def _consume(cluster: ClusterConfig, topic: str, total: int) -> dict[int, list[Any]]:
    """Every record of ``topic`` deserialized with the cluster's own registry, per partition
    in offset order."""
    assert cluster.schema_registry is not None
    deserialize = AvroDeserializer(SchemaRegistryClient({"url": cluster.schema_registry.url}))
    consumer = Consumer(
        cluster.as_librdkafka()
        | {
            "group.id": unique("avro-reader"),
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    read: dict[int, list[Any]] = {}
    try:
        deadline = time.monotonic() + 60
        while sum(map(len, read.values())) < total:
            assert time.monotonic() < deadline, f"read {sum(map(len, read.values()))} of {total}"
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            ctx = SerializationContext(topic, MessageField.VALUE)
            read.setdefault(msg.partition(), []).append(deserialize(msg.value(), ctx))
    finally:
        consumer.close()
    return read


def _framed(cluster: ClusterConfig, topic: str, schema_id: int) -> dict[int, int]:
    """Per partition, the first offset whose value carries ``schema_id``."""
    first = {}
    for p in range(PARTITIONS):
        for record in read_partition(cluster, topic, p, 0, 1 << 62):
            if framed_id(record.value) == schema_id and record.offset is not None:
                first[p] = record.offset
                break
    return first


def test_a_migration_carries_schemas_and_quotas_and_avro_consumers_read_on_the_target(
    clusters: Clusters, tmp_path: Path
) -> None:
    """`plan new` plans the registry copy and the quotas, `migrate start` copies both
    before it mirrors; Avro consumers on the target then read every record. A schema
    registered after the copy is found by verify, and moving the consumers copies it."""
    topic, user, group = unique("avro"), unique("avro-user"), unique("avro-g")
    quota = {(("user", user),): {"producer_byte_rate": 1048576.0}}
    assert clusters.source.schema_registry and clusters.target.schema_registry
    # A subject registered first on the source but copied after this topic's (copies go
    # subject by subject in name order): without the source's ids the target would number
    # this topic's schemas differently.
    later = f"zz-{topic}"
    SchemaRegistryClient({"url": clusters.source.schema_registry.url}).register_schema(
        later, ConfluentSchema('"string"', "AVRO")
    )
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, PARTITIONS)
    with ClientQuotas(clusters.source) as quotas:
        quotas.alter(quota)
    sent = _produce(clusters.source, topic, 1, range(0, 150))
    for p, values in _produce(clusters.source, topic, 2, range(150, 300)).items():
        sent[p] += values
    commit_group(clusters.source, topic, group, PARTITIONS, 10)  # a stopped group

    config = mirror_config(clusters.config_path, tmp_path)
    plan_path, name = tmp_path / "plan.yaml", unique("m")
    args = ["plan", "new", "--source", "source", "--target", "target", "--topics", topic]
    args += ["--groups", group, "--name", name, "-o", str(plan_path)]
    made = run_in(tmp_path, ["--config", str(config), *args])
    assert made.code == 0, made.stdout + made.stderr
    plan = load_plan(plan_path)
    assert plan.schemas is not None and plan.schemas.enabled and plan.schemas.versions >= 3
    assert quota.items() <= {q.key(): q.values for q in plan.quotas}.items()
    try:
        started = run_cli("migrate", "start", str(plan_path), "--json", config=str(config))
        assert started.code == 0, started.stderr
        assert json.loads(started.stdout)["schemas_registered"] >= 2
        source_ids, target_ids = _ids(clusters.source), _ids(clusters.target)
        for key in ((f"{topic}-value", 1), (f"{topic}-value", 2), (later, 1)):
            assert source_ids[key] == target_ids[key], key
        with ClientQuotas(clusters.target) as quotas:
            assert quota.items() <= quotas.describe().items()
        assert _consume(clusters.target, topic, 300) == sent

        # A schema registered on the source after the copy: its records are mirrored, their
        # id is not on the target's registry, and verify says so with the first offset.
        _produce(clusters.source, topic, 3, range(300, 330))
        wait_for(
            lambda: _ends(clusters.target, topic) == _ends(clusters.source, topic),
            timeout=60,
            message="the mirror copying the records of schema version 3",
        )
        new_id = _ids(clusters.source)[(f"{topic}-value", 3)]
        first = _framed(clusters.target, topic, new_id)
        assert set(first) == set(range(PARTITIONS))
        report = _verify(config, name, exit=1)
        assert report["summary"]["mismatched"] == 0  # the records themselves are identical
        missing = [i for i in report["schemas"]["ids"] if i["status"] == "missing-on-target"]
        assert [i["id"] for i in missing] == [new_id]
        uses = {(u["partition"], u["offset"], u["part"]) for u in missing[0]["first_uses"]}
        assert uses == {(p, offset, "value") for p, offset in first.items()}

        # Moving the group's consumers to the target copies the new schema first.
        moved = run_cli("migrate", "consumers", "--groups", group, "--wait", config=str(config))
        assert moved.code == 0, moved.stderr
        assert "schema version(s) added on the source" in moved.stdout + moved.stderr
        assert _ids(clusters.target)[(f"{topic}-value", 3)] == new_id
        assert _verify(config, name, exit=0)["schemas"]["problems"] == 0
    finally:
        stop_mirror(config, name)


def _verify(config: Path, link: str, *, exit: int) -> dict[str, Any]:
    done = run_cli("verify", "--link", link, "--json", config=str(config), timeout=280)
    assert done.code == exit, done.stdout + done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _ids(cluster: ClusterConfig) -> dict[tuple[str, int], int]:
    return {(v.subject, v.version): v.id for v in SchemaRegistry(cluster).versions()}


def _ends(cluster: ClusterConfig, topic: str) -> list[int]:
    with ClusterAdmin(cluster) as admin:
        return [w.high for w in admin.watermarks(topic)]


# ---------------------------------------------------------------- a fresh registry pair


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Path]:
    """Two empty registries (no Kafka: `schemas` never asks a broker), and a clusters.yaml
    naming them as clusters `a` and `b`."""
    binary = sandbox_registry.ensure_registry()
    started: dict[int, Path] = {}
    urls = []
    try:
        for name, port in zip("ab", free_ports(2), strict=True):
            folder = tmp_path / name
            folder.mkdir()
            pid = sandbox_registry.start(binary, folder, port)
            started[pid] = sandbox_registry.config_path(folder)
            sandbox_registry.wait_ready(name, pid, port, folder, 30)
            urls.append(f"http://127.0.0.1:{port}")
        config = tmp_path / "kmigrate.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "clusters": {
                        name: {"bootstrap_servers": "127.0.0.1:9", "schema_registry": {"url": url}}
                        for name, url in zip("ab", urls, strict=True)
                    }
                }
            )
        )
        yield config
    finally:
        process.stop_processes(started, grace=5.0)


def _registry(config: Path, name: str) -> SchemaRegistry:
    return SchemaRegistry(load_settings(config).cluster(name))


def _fill(registry: SchemaRegistry, subjects: int, versions: int) -> None:
    """``subjects`` x ``versions`` Avro schemas registered as a producer would, each subject
    after the first referring to the first one's version 1; the first subject's
    compatibility NONE, the last one READONLY, one version soft-deleted."""
    auth = registry.config.basic_auth_user_info
    client = SchemaRegistryClient(
        {"url": registry.url} | ({"basic.auth.user.info": auth.get_secret_value()} if auth else {})
    )
    common = "common-value"
    client.set_compatibility(common, "NONE")
    client.register_schema(
        common,
        ConfluentSchema(
            json.dumps({"type": "record", "name": "Common", "namespace": "k", "fields": []}), "AVRO"
        ),
    )
    for s in range(subjects):
        for v in range(versions):
            fields = [{"name": f"f{i}", "type": "int", "default": i} for i in range(v + 1)]
            fields.append({"name": "common", "type": ["null", "k.Common"], "default": None})
            text = json.dumps(
                {"type": "record", "name": f"S{s}", "namespace": "k", "fields": fields}
            )
            ref = SchemaReference("k.Common", common, 1)
            client.register_schema(f"t{s:03d}-value", ConfluentSchema(text, "AVRO", [ref]))
    client.delete_version("t000-value", 1)
    client.set_compatibility(None, "FULL")
    registry.set_mode("READONLY", f"t{subjects - 1:03d}-value")


def test_a_target_holding_another_schema_under_an_id_is_refused_before_writing(
    pair: Path,
) -> None:
    source, target = _registry(pair, "a"), _registry(pair, "b")
    _fill(source, 2, 2)
    taken = next(v for v in source.versions() if v.subject == "t001-value")
    # Another team's schema under the same id, imported on the target before the copy.
    target.set_mode("IMPORT", "theirs-value")
    target.register(SchemaVersion("theirs-value", 1, taken.id, Schema("AVRO", '"bytes"')))
    target.set_mode(None, "theirs-value")
    before = (
        target.versions(),
        target.subjects(),
        target.mode("theirs-value"),
        target.compatibility(),
    )

    done = run_in(
        pair.parent, ["--config", str(pair), "schemas", "copy", "--source", "a", "--target", "b"]
    )
    assert done.code == 5, done.stdout + done.stderr
    assert f"another schema under id {taken.id}" in done.stderr
    assert "nothing was written" in done.stderr
    after = (
        target.versions(),
        target.subjects(),
        target.mode("theirs-value"),
        target.compatibility(),
    )
    assert after == before


def test_a_copy_killed_at_a_random_moment_is_finished_by_running_it_again(pair: Path) -> None:
    source, target = _registry(pair, "a"), _registry(pair, "b")
    _fill(source, 25, 4)
    total = len(source.versions())
    rng = seeded()
    kill_after = rng.randint(1, total - 1)
    print(f"killing the copy once the target holds {kill_after} of {total} versions")
    env = {**os.environ, "COLUMNS": "200"}
    copy = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kmigrate",
            "--config",
            str(pair),
            "schemas",
            "copy",
            "--source",
            "a",
            "--target",
            "b",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        wait_for(
            lambda: copy.poll() is not None or len(target.versions()) >= kill_after,
            timeout=60,
            message=f"the copy to write {kill_after} versions",
            interval=0.01,
        )
    finally:
        if copy.poll() is None:
            os.killpg(copy.pid, signal.SIGKILL)
        copy.wait(10)
    held = len(target.versions())
    print(f"killed with {held} of {total} versions on the target (exit {copy.returncode})")

    again = run_in(
        pair.parent,
        ["--config", str(pair), "schemas", "copy", "--source", "a", "--target", "b", "--json"],
    )
    assert again.code == 0, again.stdout + again.stderr
    assert json.loads(again.stdout)["differences"] == []
    compared = run_in(
        pair.parent, ["--config", str(pair), "schemas", "compare", "--source", "a", "--target", "b"]
    )
    assert compared.code == 0, compared.stdout + compared.stderr
    ids = {(v.subject, v.version): (v.id, v.deleted) for v in source.versions()}
    assert {(v.subject, v.version): (v.id, v.deleted) for v in target.versions()} == ids
    modes = {s: target.mode(s) for s in target.subjects()}
    assert modes == {s: ("READONLY" if s == "t024-value" else None) for s in modes}
    assert target.compatibility() == "FULL" and target.compatibility("common-value") == "NONE"


def test_clusters_check_reads_each_clusters_registry_and_exits_3_when_one_is_away(
    clusters: Clusters, tmp_path: Path
) -> None:
    config = mirror_config(clusters.config_path, tmp_path)
    done = run_in(tmp_path, ["--config", str(config), "clusters", "check", "--json"])
    assert done.code == 0, done.stdout + done.stderr
    found = {c["name"]: c["schema_registry"] for c in json.loads(done.stdout)["clusters"]}
    assert clusters.source.schema_registry is not None
    assert found["source"]["url"] == clusters.source.schema_registry.url
    assert found["source"]["failure"] is None and found["source"]["mode"] == "READWRITE"

    raw = yaml.safe_load(config.read_text())
    (port,) = free_ports(1)
    raw["clusters"]["target"]["schema_registry"] = {"url": f"http://127.0.0.1:{port}"}
    config.write_text(yaml.safe_dump(raw))
    away = run_in(tmp_path, ["--config", str(config), "clusters", "check"])
    assert away.code == 3, away.stdout + away.stderr
    assert f"cannot reach the schema registry of cluster 'target' (http://127.0.0.1:{port})" in (
        away.stderr
    )


# A bcrypt hash of REGISTRY_PASSWORD (cost 4), for a registry that asks for basic auth.
REGISTRY_PASSWORD = "registry-test-password"
REGISTRY_HASH = "$2a$04$5ItVQPoAcFW9TPbo6Y/jEu01R9VoRE9bABpBcPuKh1miMzhhZU/zW"


def test_a_registry_behind_basic_auth_is_read_with_the_configured_credentials(
    pair: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`basic_auth_user_info` from clusters.yaml (its password from the environment)
    reaches the registry; a wrong one is refused with exit 3, and neither is shown."""
    folder = tmp_path / "guarded"
    folder.mkdir()
    (port,) = free_ports(1)
    settings = folder / "registry.yaml"
    # The registry expands ${...} in its file, and `$` in a bcrypt hash with it: the hash
    # comes through its environment.
    settings.write_text(
        f"server: {{host: 127.0.0.1, port: {port}}}\nstorage: {{type: memory}}\n"
        "security:\n  auth:\n    enabled: true\n    methods: [basic]\n"
        "    basic: {users: {kmigrate: '${KMIGRATE_TEST_HASH}'}}\n"
        "    rbac: {enabled: false, default_role: admin}\n"
    )
    binary = sandbox_registry.ensure_registry()
    pid = process.start_detached(
        [str(binary), "-config", str(settings)],
        folder / "registry.log",
        env={"KMIGRATE_TEST_HASH": REGISTRY_HASH},
    )
    try:
        wait_for(
            lambda: _status(f"http://127.0.0.1:{port}/subjects") == 401,
            timeout=30,
            message="the guarded registry asking for credentials",
        )
        raw = yaml.safe_load(pair.read_text())
        raw["clusters"]["a"]["schema_registry"] = {
            "url": f"http://127.0.0.1:{port}",
            "basic_auth_user_info": "kmigrate:${KMIGRATE_REGISTRY_PASSWORD}",
        }
        pair.write_text(yaml.safe_dump(raw))
        monkeypatch.setenv("KMIGRATE_REGISTRY_PASSWORD", REGISTRY_PASSWORD)
        _fill(_registry(pair, "a"), 2, 1)
        copied = run_in(
            pair.parent,
            ["--config", str(pair), "schemas", "copy", "--source", "a", "--target", "b", "--json"],
        )
        assert copied.code == 0, copied.stdout + copied.stderr
        assert json.loads(copied.stdout)["differences"] == []

        monkeypatch.setenv("KMIGRATE_REGISTRY_PASSWORD", "not-the-password")
        refused = run_in(pair.parent, ["--config", str(pair), "schemas", "list", "--cluster", "a"])
        assert refused.code == 3, refused.stdout + refused.stderr
        assert "refused kmigrate's credentials (HTTP 401)" in refused.stderr
        for ran in (copied, refused):
            shown = ran.stdout + ran.stderr
            assert REGISTRY_PASSWORD not in shown and "not-the-password" not in shown
    finally:
        process.stop_processes({pid: settings}, grace=5.0)


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0

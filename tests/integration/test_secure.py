"""SASL/SCRAM clusters: KRaft with the standard authorizer (the session's `secure`
sandbox) and ZooKeeper mode with AclAuthorizer (a sandbox of its own): credentials,
ACLs, no leaked secrets."""

from __future__ import annotations

import hashlib
import subprocess
import time
from pathlib import Path

import pytest

from kmigrate.config import load_settings
from kmigrate.errors import AuthorizationError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce, read_partition
from kmigrate.model.cluster import AclEntry
from kmigrate.model.records import Record
from kmigrate.sandbox.clusters_yaml import cluster_config, load_passwords
from kmigrate.sandbox.jars import ensure_jars
from kmigrate.sandbox.process import java_executable
from kmigrate.sandbox.state import ADMIN_USER, CLIENT_USER, SandboxState, load_state
from tests.helpers import run_cli, unique, wait_for


def _config(state: SandboxState) -> str:
    return str(state.directory / "clusters.yaml")


def _passwords(state: SandboxState) -> list[str]:
    return list(load_passwords(state.directory, "locked").values())


def test_admin_with_the_sandbox_credentials_works(secure: SandboxState) -> None:
    cluster = load_settings(_config(secure)).cluster("locked")
    with ClusterAdmin(cluster) as admin:
        assert len(admin.describe_cluster().brokers) == 1
        topic = admin.create_topic(unique("sec"), 1)
    sent = produce(cluster, topic.name, [Record(b"k", b"v", partition=0)])
    assert read_partition(cluster, topic.name, 0, 0, 1) == sent


def test_clusters_yaml_holds_no_password(secure: SandboxState) -> None:
    text = Path(_config(secure)).read_text()
    assert "${KMIGRATE_SANDBOX_LOCKED_ADMIN_PASSWORD}" in text
    assert not any(p in text for p in _passwords(secure))
    assert (secure.directory / "secrets.env").stat().st_mode & 0o077 == 0


def test_no_command_output_shows_a_password(secure: SandboxState) -> None:
    outputs = [
        run_cli("clusters", "list", config=_config(secure)),
        run_cli("clusters", "list", "--json", config=_config(secure)),
        run_cli("-v", "clusters", "describe", "locked", config=_config(secure)),
        run_cli("-v", "topics", "list", "--cluster", "locked", "--json", config=_config(secure)),
    ]
    for result in outputs:
        assert result.code == 0, result.stderr
        for password in _passwords(secure):
            assert password not in result.stdout + result.stderr
    assert "********" in outputs[0].stdout


def test_wrong_password_is_one_line_naming_the_credentials(
    secure: SandboxState, tmp_path: Path
) -> None:
    bootstrap = secure.clusters["locked"].bootstrap_servers
    config = tmp_path / "wrong.yaml"
    config.write_text(
        "clusters:\n  locked:\n"
        f"    bootstrap_servers: {bootstrap}\n    timeout_s: 5\n"
        "    properties:\n      security.protocol: SASL_PLAINTEXT\n"
        "      sasl.mechanism: SCRAM-SHA-512\n      sasl.username: admin\n"
        "      sasl.password: not-the-Password-42\n"
    )
    result = run_cli("topics", "list", "--cluster", "locked", config=str(config))
    assert result.code == 3
    assert result.stderr.count("\n") == 1
    assert "rejected kmigrate's credentials" in result.stderr
    assert "not-the-Password-42" not in result.stderr + result.stdout
    assert "Traceback" not in result.stderr


def test_acl_round_trip_grants_and_revokes_a_real_permission(secure: SandboxState) -> None:
    admin_cluster = load_settings(_config(secure)).cluster("locked")
    client_cluster = cluster_config(
        secure, secure.clusters["locked"], user=CLIENT_USER, timeout_s=5
    )
    topic = unique("acl")
    grant = AclEntry("TOPIC", topic, "LITERAL", f"User:{CLIENT_USER}", "*", "WRITE", "ALLOW")
    with ClusterAdmin(admin_cluster) as admin:
        admin.create_topic(topic, 1)
        with pytest.raises(AuthorizationError):
            produce(client_cluster, topic, [Record(None, b"denied", partition=0)])

        admin.create_acls([grant])
        assert grant in admin.list_acls()

        def client_can_write() -> bool:
            try:
                produce(client_cluster, topic, [Record(None, b"allowed", partition=0)])
                return True
            except AuthorizationError:
                return False

        wait_for(client_can_write, timeout=30, message="the WRITE ACL to take effect")
        assert admin.delete_acls([grant]) == 1
        assert grant not in admin.list_acls()
    values = [r.value for r in read_partition(admin_cluster, topic, 0, 0, 10)]
    assert values == [b"allowed"]


def test_spark_tasks_read_the_secure_cluster_with_the_same_cluster_entry(
    secure: SandboxState,
) -> None:
    """One clusters.yaml entry drives the admin layer and the Spark tasks alike: a task
    on an executor authenticates with the same SCRAM credentials (confluent-kafka)."""
    from kmigrate.config import SparkConfig
    from kmigrate.spark.session import build_context
    from kmigrate.spark.tasks import run_tasks
    from kmigrate.verify.fingerprint import DigestTask, digest_ranges, fingerprint
    from kmigrate.verify.ranges import Span

    cluster = load_settings(_config(secure)).cluster("locked")
    now = int(time.time() * 1000)  # recent: retention must not delete them meanwhile
    with ClusterAdmin(cluster) as admin:
        topic = admin.create_topic(unique("spark"), 2)
    sent = produce(
        cluster,
        topic.name,
        [Record(b"k%d" % i, b"v%d" % i, (("h", b"%d" % i),), now + i, i % 2) for i in range(20)],
    )
    tasks = [DigestTask("s", cluster.as_librdkafka(), topic.name, p, Span(0, 10)) for p in (0, 1)]
    spark = build_context(SparkConfig(master="local[2]"), "kmigrate-test")
    try:
        results = run_tasks(spark, digest_ranges, tasks, [10, 10], description="secure read")
    finally:
        spark.stop()
    for result in results:
        mine = [r for r in sent if r.partition == result.partition]
        (chunk,) = result.chunks
        assert (chunk.records, chunk.first_offset, chunk.last_offset) == (10, 0, 9)
        prints = b"".join(fingerprint(r.key, r.value, r.headers, r.timestamp or 0, 0) for r in mine)
        assert chunk.digest == hashlib.blake2b(prints, digest_size=16).digest()


def test_a_secure_zookeeper_mode_cluster_logs_in_with_scram_and_enforces_acls(
    tmp_path: Path,
) -> None:
    """`sandbox up --zookeeper ... --secure`: kmigrate and Kafka's own tools log in as
    the admin; a wrong password is refused; the second user only where an ACL allows."""
    directory = tmp_path / "sb"
    up = run_cli("sandbox", "up", "--dir", str(directory), "--zookeeper", "zk/kafka",
                 "--nodes", "1", "--cluster", "guarded", "--secure", timeout=600)  # fmt: skip
    try:
        assert up.code == 0, up.stderr
        state = load_state(directory.resolve())
        passwords = load_passwords(state.directory, "guarded")
        assert set(passwords) == {ADMIN_USER, CLIENT_USER}
        texts = up.stdout + up.stderr + (directory / "clusters.yaml").read_text()
        assert not any(p in texts for p in passwords.values())
        _admin_and_java_tools_log_in(state, passwords[ADMIN_USER], tmp_path)
        _client_allowed_only_by_an_acl(state)
    finally:
        run_cli("sandbox", "down", "--dir", str(directory), "--purge", "--yes", "--grace", "5")


def _admin_and_java_tools_log_in(state: SandboxState, password: str, tmp_path: Path) -> None:
    admin_cluster = load_settings(_config(state)).cluster("guarded")
    with ClusterAdmin(admin_cluster) as admin:
        topic = admin.create_topic(unique("zksec"), 1).name
    properties = tmp_path / "admin.properties"
    properties.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{ADMIN_USER}" password="{password}";\n'
    )
    bootstrap = state.clusters["guarded"].bootstrap_servers
    jars = ensure_jars("3.9.1")
    listed = subprocess.run(
        [java_executable(), "-cp", f"{jars}/*", "org.apache.kafka.tools.TopicCommand",
         "--bootstrap-server", bootstrap, "--command-config", str(properties), "--list"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert topic in listed.stdout.split()

    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(
        f"clusters:\n  guarded:\n    bootstrap_servers: {bootstrap}\n    timeout_s: 5\n"
        "    properties:\n      security.protocol: SASL_PLAINTEXT\n"
        "      sasl.mechanism: SCRAM-SHA-512\n      sasl.username: admin\n"
        "      sasl.password: not-the-Password-42\n"
    )
    refused = run_cli("topics", "list", "--cluster", "guarded", config=str(wrong))
    assert refused.code == 3 and "rejected kmigrate's credentials" in refused.stderr


def _client_allowed_only_by_an_acl(state: SandboxState) -> None:
    admin_cluster = load_settings(_config(state)).cluster("guarded")
    client = cluster_config(state, state.clusters["guarded"], user=CLIENT_USER, timeout_s=5)
    allowed, closed = unique("allowed"), unique("closed")
    grant = AclEntry("TOPIC", allowed, "LITERAL", f"User:{CLIENT_USER}", "*", "WRITE", "ALLOW")
    with ClusterAdmin(admin_cluster) as admin:
        admin.create_topic(allowed, 1)
        admin.create_topic(closed, 1)
        admin.create_acls([grant])

    def writes(topic: str) -> bool:
        try:
            produce(client, topic, [Record(None, b"v", partition=0)])
            return True
        except AuthorizationError:
            return False

    wait_for(lambda: writes(allowed), timeout=30, message="the WRITE ACL to take effect")
    assert not writes(closed), "a user without an ACL wrote (allow.everyone must be off)"

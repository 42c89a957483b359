"""SASL/SCRAM clusters: KRaft with the standard authorizer (the session's `secure`
sandbox) and ZooKeeper mode with AclAuthorizer (a sandbox of its own): credentials,
ACLs, no leaked secrets."""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from pathlib import Path

import pytest

from harness.helpers import java_on, run_cli, unique, wait_for
from kmigrate.config import load_settings
from kmigrate.errors import AuthorizationError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce, read_partition
from kmigrate.model.cluster import AclEntry
from kmigrate.model.records import Record
from kmigrate.sandbox.clusters_yaml import cluster_config, load_passwords
from kmigrate.sandbox.jars import ensure_jars
from kmigrate.sandbox.state import ADMIN_USER, CLIENT_USER, SandboxState, load_state
from tests.integration.cli_contract.harness import Ran, run_in


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
        [*java_on(jars), "org.apache.kafka.tools.TopicCommand",
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


def test_scram_users_move_with_their_passwords_and_log_in_on_the_target(
    secure: SandboxState, tmp_path: Path
) -> None:
    """`users copy` creates the source's SCRAM users on the target from a password file:
    the target lists them with the same mechanism and iterations, a client logs in there
    with the password, a user without one is listed (exit 1), and no output shows a
    password."""
    config = _config(secure)
    locked = load_settings(config).cluster("locked")
    user, other, password = unique("mover"), unique("nopass"), "Pw-" + unique("x")
    with ClusterAdmin(locked) as admin:
        admin.upsert_scram_credential(user, "SCRAM-SHA-512", 8192, password)
        admin.upsert_scram_credential(user, "SCRAM-SHA-256", 4096, password)
        admin.upsert_scram_credential(other, "SCRAM-SHA-512", 8192, "Pw-unused-7")
    passwords = tmp_path / "passwords"
    passwords.write_text(f"# for the move\n{user}={password}\n")
    passwords.chmod(0o600)

    def kmigrate(*argv: str) -> Ran:  # in-process: a subprocess adds nothing here
        return run_in(tmp_path, ["--config", config, *argv])

    args = ("users", "copy", "--source", "locked", "--target", "vault", "--passwords",
            str(passwords))  # fmt: skip
    dry = kmigrate(*args, "--dry-run")
    with ClusterAdmin(load_settings(config).cluster("vault")) as vault:
        assert user not in vault.scram_credentials(), "a dry run creates nothing"
    done = kmigrate(*args, "--json")
    assert done.code == 1, done.stderr  # `other` has no password: listed, not created
    answer = json.loads(done.stdout)
    # other tests' users on the shared cluster have no password in the file either
    assert other in [c["user"] for c in answer["no_password"]]
    assert sorted(c["mechanism"] for c in answer["created"]) == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    with ClusterAdmin(load_settings(config).cluster("vault")) as vault:
        assert vault.scram_credentials()[user] == ["SCRAM-SHA-256/4096", "SCRAM-SHA-512/8192"]
    vault_admin = load_settings(config).cluster("vault")
    login = {**vault_admin.properties, "sasl.username": user, "sasl.password": password}
    as_user = vault_admin.model_copy(update={"properties": login, "timeout_s": 5})
    with ClusterAdmin(as_user) as admin:
        admin.describe_cluster()  # SCRAM login with the copied password
    again = kmigrate(*args)
    assert again.code == 1 and "already there" in again.stdout, again.stdout
    for ran in (dry, done, again):
        assert password not in ran.stdout + ran.stderr


def test_acls_are_planned_under_the_principals_the_map_gives_and_work_on_the_target(
    secure: SandboxState, tmp_path: Path
) -> None:
    """`plan new --principal-map`: a topic's ACL for `User:<old>` on the source is planned
    (and copied, as `migrate start` copies it) for `User:<new>`, who can then write on
    the target; an ACL whose principal the map drops is listed with why, not planned."""
    from kmigrate.migration.acls import copy_acls
    from kmigrate.migration.plan import load_plan

    config = _config(secure)
    settings = load_settings(config)
    topic, old, new, gone = unique("remap"), unique("old"), unique("new"), unique("gone")
    password = "Pw-" + unique("n")
    write = AclEntry("TOPIC", topic, "LITERAL", f"User:{old}", "*", "WRITE", "ALLOW")
    dropped = AclEntry("TOPIC", topic, "LITERAL", f"User:{gone}", "*", "READ", "ALLOW")
    with ClusterAdmin(settings.cluster("locked")) as locked:
        locked.create_topic(topic, 1)
        locked.create_acls([write, dropped])
    rules = tmp_path / "map.yaml"
    rules.write_text(
        f"principals:\n  - from: 'User:{old}'\n    to: 'User:{new}'\n"
        f"  - match: 'User:(gone-.*)'\n    to: null\n"
    )
    plan_path = tmp_path / "plan.yaml"
    made = run_in(tmp_path, ["--config", config, "plan", "new", "--source", "locked", "--target",
                             "vault", "--topics", topic, "--principal-map", str(rules),
                             "-o", str(plan_path)])  # fmt: skip
    assert made.code == 0, made.stderr
    plan = load_plan(plan_path)
    assert [(a.principal, a.operation) for a in plan.acls] == [(f"User:{new}", "WRITE")]
    assert [(a.principal, a.reason) for a in plan.acls_not_copied] == [
        (f"User:{gone}", "the principal map gives this principal no principal on the target")
    ]

    with ClusterAdmin(settings.cluster("vault")) as vault:
        vault.create_topic(topic, 1)
        vault.upsert_scram_credential(new, "SCRAM-SHA-512", 8192, password)
        created, problem = copy_acls(vault, [a.entry() for a in plan.acls])
        assert problem is None and [a.principal for a in created] == [f"User:{new}"]
    admin_login = settings.cluster("vault")
    login = {**admin_login.properties, "sasl.username": new, "sasl.password": password}
    as_new = admin_login.model_copy(update={"properties": login, "timeout_s": 5})

    def new_can_write() -> bool:
        try:
            produce(as_new, topic, [Record(None, b"remapped", partition=0)])
            return True
        except AuthorizationError:
            return False  # the ACL reaches every broker a moment later

    wait_for(new_can_write, timeout=30, message=f"User:{new} writing to {topic} on the target")


def test_the_byte_copy_mirrors_between_scram_clusters(secure: SandboxState, tmp_path: Path) -> None:
    """The mirror's own Kafka connections log in with SCRAM on both sides (the
    clusters.yaml entries the admin layer uses): committed and aborted transactions and
    plain records arrive record for record, copied as bytes."""
    from tests.integration.mirror.harness import byte_copy_checked

    assert byte_copy_checked(Path(_config(secure)), "locked", "vault", tmp_path) == 320

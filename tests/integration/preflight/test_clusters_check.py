"""`kmigrate clusters check`, the preflight, on the session's secure sandbox (KRaft, SASL
SCRAM, the standard authorizer with no access without an ACL): the admin principal may
do everything; a principal granted only what a mirror source needs is told which
operation each other role would fail on and why; an unreachable cluster exits 3."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from harness.helpers import CliResult, run_cli, unique, wait_for
from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.cluster import AclEntry
from kmigrate.sandbox.state import SCRAM_MECHANISM, SandboxState


def _sandbox_config(state: SandboxState) -> str:
    return str(state.directory / "clusters.yaml")


def _limited_config(state: SandboxState, tmp_path: Path, user: str, password: str) -> Path:
    """A config reaching `locked` as ``user`` (the password from the environment)."""
    bootstrap = state.clusters["locked"].bootstrap_servers
    config = tmp_path / "limited.yaml"
    config.write_text(
        "clusters:\n  limited:\n"
        f"    bootstrap_servers: {bootstrap}\n    timeout_s: 10\n"
        "    properties:\n      security.protocol: SASL_PLAINTEXT\n"
        f"      sasl.mechanism: {SCRAM_MECHANISM}\n      sasl.username: {user}\n"
        "      sasl.password: ${PREFLIGHT_PASSWORD}\n"
    )
    return config


def _check(config: Path, password: str, *names: str) -> CliResult:
    env = {"PREFLIGHT_PASSWORD": password}
    return run_cli("clusters", "check", *names, "--json", config=str(config), env=env)


def test_the_admin_principal_passes_with_mode_and_version(secure: SandboxState) -> None:
    done = run_cli("clusters", "check", "locked", "--json", config=_sandbox_config(secure))
    assert done.code == 0, done.stderr
    (report,) = json.loads(done.stdout)["clusters"]
    assert report["principal"] == "User:admin"
    assert report["authenticated"] is True
    assert (report["mode"], report["version"]) == ("KRaft", "4.0 or later")
    assert not [f for f in report["findings"] if f["ok"] is False]


def test_a_principal_lacking_permissions_is_told_which_role_breaks_and_why(
    secure: SandboxState, tmp_path: Path
) -> None:
    user, password = unique("preflight"), f"Pf-{uuid.uuid4().hex}"
    topic = unique("preflight")
    grants = [  # what a mirror source needs on one topic, and nothing on the cluster
        AclEntry("TOPIC", topic, "LITERAL", f"User:{user}", "*", op, "ALLOW")
        for op in ("READ", "DESCRIBE_CONFIGS")
    ]
    with ClusterAdmin(load_settings(_sandbox_config(secure)).cluster("locked")) as admin:
        admin.upsert_scram_credential(user, SCRAM_MECHANISM, 4096, password)
        admin.create_topic(topic, 1)
        admin.create_acls(grants)
    config = _limited_config(secure, tmp_path, user, password)

    def sees_the_topic() -> CliResult | None:
        done = _check(config, password, "limited", "--topics", topic)
        report = json.loads(done.stdout)["clusters"][0] if done.stdout else {}
        return done if report.get("topics_seen") == 1 else None

    done = wait_for(sees_the_topic, timeout=60, message=f"{user} to log in and see {topic}")
    (report,) = json.loads(done.stdout)["clusters"]
    assert done.code == 3
    assert report["principal"] == f"User:{user}"
    assert report["roles"]["mirror source"] == "ok"
    assert report["roles"]["mirror target"].startswith("missing")
    assert report["roles"]["reassign"] == "missing 5"  # 4 on the cluster, 1 on the topic
    # without DESCRIBE_CONFIGS on the cluster, the mode is unknown and says why
    assert "DESCRIBE_CONFIGS on the cluster denied" in report["mode"]
    lacking = {(f["role"], f["operation"]) for f in report["findings"] if f["ok"] is False}
    assert ("mirror target", "CREATE") in lacking
    assert ("mirror target", "WRITE") in lacking
    assert ("reassign", "ALTER") in lacking
    assert ("mirror source", "READ") not in lacking
    error = json.loads(done.stderr)
    assert error["exit"] == 3 and error["code"] == "authorization"
    assert (
        f"cluster 'limited' as User:{user}: mirror target: cannot CREATE topics" in error["error"]
    )
    assert "(cluster authorization)" in error["error"]
    assert password not in done.stdout + done.stderr

    table = run_cli(
        "clusters", "check", "limited", "--topics", topic, config=str(config),
        env={"PREFLIGHT_PASSWORD": password},
    )  # fmt: skip
    assert table.code == 3
    assert table.stderr.count("\n") == 1 and table.stderr.startswith("error: ")
    assert "limited: mirror target: cannot WRITE topics" in table.stdout


def test_an_unreachable_cluster_exits_3_with_the_reason(tmp_path: Path) -> None:
    config = _nowhere_config(tmp_path)
    done = run_cli("clusters", "check", "nowhere", "--json", config=str(config))
    assert done.code == 3
    (report,) = json.loads(done.stdout)["clusters"]
    assert report["ok"] is False and report["roles"] is None
    assert "cannot reach cluster 'nowhere' at 127.0.0.1:1" in report["failure"]
    assert json.loads(done.stderr)["code"] == "cluster"
    table = run_cli("clusters", "check", config=str(config))
    assert table.code == 3
    assert "unreachable" in table.stdout
    assert "cannot reach cluster 'nowhere'" in table.stderr


def _nowhere_config(tmp_path: Path) -> Path:
    config = tmp_path / "nowhere.yaml"
    config.write_text(
        "clusters:\n  nowhere:\n    bootstrap_servers: 127.0.0.1:1\n    timeout_s: 2\n"
    )
    return config

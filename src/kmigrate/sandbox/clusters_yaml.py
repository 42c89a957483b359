"""The sandbox's clusters.yaml and secrets.env, which every other command can read.

Passwords live only in secrets.env (mode 0600); clusters.yaml refers to them as
${KMIGRATE_SANDBOX_<CLUSTER>_<USER>_PASSWORD}, so the YAML can be shown or copied
without leaking anything.
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

import yaml

from kmigrate.config import SANDBOX_CONFIG_NAME, ClusterConfig, parse_settings, read_env_file
from kmigrate.sandbox.state import (
    ADMIN_USER,
    CLIENT_USER,
    SCRAM_MECHANISM,
    SandboxCluster,
    SandboxState,
)
from kmigrate.sandbox.tls import tls_files

SECRETS_FILE = "secrets.env"


def password_variable(cluster: str, user: str) -> str:
    return f"KMIGRATE_SANDBOX_{re.sub(r'[^A-Z0-9]', '_', cluster.upper())}_{user.upper()}_PASSWORD"


def new_passwords(directory: Path, cluster: str) -> dict[str, str]:
    """Fresh SCRAM passwords for a secure cluster's admin and client users, saved to secrets.env."""
    passwords = {ADMIN_USER: secrets.token_urlsafe(18), CLIENT_USER: secrets.token_urlsafe(18)}
    values = _read_secrets(directory)
    values.update({password_variable(cluster, u): p for u, p in passwords.items()})
    _write_secrets(directory, values)
    return passwords


def load_passwords(directory: Path, cluster: str) -> dict[str, str]:
    values = _read_secrets(directory)
    return {
        u: values[password_variable(cluster, u)]
        for u in (ADMIN_USER, CLIENT_USER)
        if password_variable(cluster, u) in values
    }


def _read_secrets(directory: Path) -> dict[str, str]:
    path = directory / SECRETS_FILE
    return dict(read_env_file(path)) if path.is_file() else {}


def _write_secrets(directory: Path, values: dict[str, str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / SECRETS_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("".join(f"{k}={v}\n" for k, v in sorted(values.items())))


def _cluster_entry(
    cluster: SandboxCluster, directory: Path, user: str = ADMIN_USER
) -> dict[str, object]:
    entry: dict[str, object] = {"bootstrap_servers": cluster.bootstrap_servers}
    properties: dict[str, object] = {}
    if cluster.listener != "PLAINTEXT":
        properties["security.protocol"] = cluster.listener
    if cluster.secure:
        properties |= {
            "sasl.mechanism": SCRAM_MECHANISM,
            "sasl.username": user,
            "sasl.password": "${" + password_variable(cluster.name, user) + "}",
        }
    if cluster.tls:
        files = tls_files(directory / cluster.name)
        properties["ssl.ca.location"] = str(files.ca)
        if cluster.mtls:
            certificate, key = files.client(user)
            properties |= {"ssl.certificate.location": str(certificate),
                           "ssl.key.location": str(key)}  # fmt: skip
    if properties:
        entry["properties"] = properties
    if cluster.schema_registry is not None:
        entry["schema_registry"] = {"url": cluster.schema_registry.url}
    return entry


def clusters_yaml_text(state: SandboxState) -> str:
    document: dict[str, object] = {
        "env_file": SECRETS_FILE,
        "clusters": {
            n: _cluster_entry(c, state.directory) for n, c in sorted(state.clusters.items())
        },
    }
    if state.ensembles:
        document["zookeeper"] = {
            n: {"connect": e.connect} for n, e in sorted(state.ensembles.items())
        }
    document["store"] = {"url": "sqlite:///kmigrate.db"}
    header = "# Written by `kmigrate sandbox up`; rewritten on every up/down.\n"
    return header + yaml.safe_dump(document, sort_keys=False)


def write_clusters_yaml(state: SandboxState) -> Path:
    path = state.directory / SANDBOX_CONFIG_NAME
    if not (state.directory / SECRETS_FILE).is_file():
        _write_secrets(state.directory, {})
    path.write_text(clusters_yaml_text(state))
    return path


def cluster_config(
    state: SandboxState, cluster: SandboxCluster, *, user: str = ADMIN_USER, timeout_s: float = 10.0
) -> ClusterConfig:
    """The ClusterConfig for a sandbox cluster, credentials resolved from secrets.env."""
    entry = _cluster_entry(cluster, state.directory, user)
    document = {"env_file": SECRETS_FILE, "clusters": {cluster.name: entry}}
    settings = parse_settings(yaml.safe_dump(document), state.directory / SANDBOX_CONFIG_NAME)
    return settings.cluster(cluster.name).model_copy(update={"timeout_s": timeout_s})

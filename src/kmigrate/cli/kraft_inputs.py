"""What `kraft plan` reads before it contacts the cluster, or from the sandbox that runs
it: the --authorizer-setting values, the controllers' endpoints (given, or free ports on
a loopback cluster), and a sandbox cluster's hidden authorizer settings."""

from __future__ import annotations

from pathlib import Path

from kmigrate.cli.operations import host_port, is_sandbox_cluster
from kmigrate.config import Settings
from kmigrate.errors import ConfigError, ConflictError
from kmigrate.kraft.plan import ClusterView
from kmigrate.kraft.trust import HIDDEN_SETTINGS
from kmigrate.net import free_ports
from kmigrate.serve.security import is_loopback


def key_values(given: tuple[str, ...]) -> dict[str, str]:
    found: dict[str, str] = {}
    for text in given:
        key, sep, value = text.partition("=")
        if not sep or key.strip() not in HIDDEN_SETTINGS:
            raise ConfigError(
                f"--authorizer-setting {text!r}: give KEY=VALUE, KEY one of "
                + ", ".join(HIDDEN_SETTINGS)
            )
        found[key.strip()] = value.strip()
    return found


def from_sandbox(settings: Settings, view: ClusterView) -> dict[str, str]:
    """The hidden authorizer settings from a sandbox cluster's server.properties (the
    same on every broker); nothing for a cluster the sandbox does not run."""
    wanted = {k for b in view.brokers for k in b.hidden}
    folder = settings.path.parent if settings.path else Path.cwd()
    if not wanted or not is_sandbox_cluster(folder, view.name):
        return {}
    from kmigrate.sandbox.kraft_operator import SandboxKRaftOperator

    sandbox = SandboxKRaftOperator(folder, view.name)
    found = [
        {k: v for k, v in sandbox.broker_settings(b.broker_id).items() if k in wanted}
        for b in view.brokers
    ]
    if any(f != found[0] for f in found):
        raise ConflictError(f"the brokers of '{view.name}' differ in {', '.join(sorted(wanted))}")
    return found[0]


def given_endpoints(given: tuple[str, ...], count: int) -> list[tuple[str, int]]:
    """The --controller HOST:PORT endpoints, one per controller, or none."""
    if given and len(given) != count:
        raise ConfigError(f"--controller given {len(given)} time(s) for --controllers {count}")
    return [host_port(text, "--controller") for text in given]


def free_endpoints(count: int, hosts: list[str]) -> list[tuple[str, int]]:
    if not all(is_loopback(h) for h in hosts):
        raise ConfigError(
            f"pass --controller HOST:PORT for each of the {count} controller(s): the brokers "
            "are not on this machine"
        )
    return [("127.0.0.1", port) for port in free_ports(count)]

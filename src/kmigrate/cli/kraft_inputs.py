"""What `kraft plan` reads before it contacts the cluster, or from the machine it runs on:
the --authorizer-setting values, the controllers' endpoints (given, or free ports on a
loopback cluster), a sandbox cluster's hidden authorizer settings, and the principal of
an SSL cluster's broker certificate."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from kmigrate.cli.operations import host_port, is_sandbox_cluster
from kmigrate.errors import ConfigError, ConflictError
from kmigrate.kraft import certificate
from kmigrate.kraft.trust import HIDDEN_SETTINGS
from kmigrate.net import free_ports
from kmigrate.serve.security import is_loopback

if TYPE_CHECKING:
    from kmigrate.config import Settings
    from kmigrate.kraft.plan import ClusterView


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


_CERTIFICATE = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.S)


def certificate_principal(view: ClusterView | None, given: str | None) -> str | None:
    """Where the brokers talk SSL, the principal of their certificate as Kafka's default
    principal builder names it ("User:" and the subject's distinguished name, as the
    brokers' ssl.principal.mapping.rules map it; kraft.certificate): as given
    (--certificate-principal), else read from their PEM key store when this machine can
    read it (a sandbox's, a broker's own host). None: not SSL, or not readable here.
    ``view`` None: only the form of ``given`` is checked."""
    if given is not None and not given.startswith("User:"):
        raise ConfigError(f"--certificate-principal {given!r}: give it as User:CN=...")
    if view is None:  # the form checked alone
        return given
    from kmigrate.kraft.plan import talks_ssl

    if not talks_ssl(view):
        if given is not None:
            raise ConfigError("--certificate-principal: the brokers do not talk SSL")
        return None
    if given is not None:
        return given
    settings = dict(view.brokers[0].ssl_settings)
    if settings.get("ssl.keystore.type", "JKS").upper() != "PEM":
        return None
    try:
        found = _CERTIFICATE.search(Path(settings["ssl.keystore.location"]).read_bytes())
    except (OSError, KeyError):
        return None
    if found is None:
        return None
    from cryptography import x509

    subject = x509.load_pem_x509_certificate(found.group(0)).subject
    return certificate.mapped(subject.rfc4514_string(), settings.get(certificate.MAPPING_RULES))

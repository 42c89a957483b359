"""Client principals mapped to backend credentials (clusters.yaml ``gateway: principals:``),
so a backend's ACLs see who is acting.

Each entry names, per backend cluster, the client properties that replace the cluster's
own for that principal (in practice ``sasl.username`` and ``sasl.password``, the
password from env_file or the environment). ``"*"`` is the entry for every principal
not named. With a map, a principal that has no entry (and no ``"*"``) is refused at
authentication; a cluster an entry does not name is reached with the gateway's own
credentials. Without a map, or without client authentication, everything goes with the
gateway's own credentials, as before.

The principal acting for the request being handled is ``ACTING``: a context variable the
client connection sets once it is authenticated, so every task it starts for its
requests (and their sub-tasks) carries it, and only the calls that act for the client
(``State.send``, the group APIs) pick the identity from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar

from kmigrate.config import ClusterConfig, GatewayConfig
from kmigrate.errors import ConfigError
from kmigrate.gateway.protocol.backend import Identity, sasl_factory

ACTING: ContextVar[str | None] = ContextVar("kmigrate_gateway_principal", default=None)
EVERYONE = "*"


class PrincipalMap:
    """principal -> cluster -> the identity the gateway uses for it there."""

    def __init__(self, entries: Mapping[str, Mapping[str, Identity]] | None = None) -> None:
        self._entries = {p: dict(c) for p, c in (entries or {}).items()}

    def __bool__(self) -> bool:
        return bool(self._entries)

    def admits(self, principal: str) -> bool:
        """Whether ``principal`` may act (always, without a map)."""
        return not self._entries or principal in self._entries or EVERYONE in self._entries

    def identity(self, cluster: str, principal: str | None = None) -> Identity | None:
        """The identity for ``principal`` (default: the one acting now) on ``cluster``;
        None: the gateway's own."""
        principal = ACTING.get() if principal is None else principal
        if principal is None or not self._entries:
            return None
        entry = self._entries.get(principal, self._entries.get(EVERYONE, {}))
        return entry.get(cluster)


def principal_map(
    config: GatewayConfig | None, clusters: Mapping[str, ClusterConfig]
) -> PrincipalMap:
    """The map of ``config`` with each credential checked against its cluster."""
    if config is None or not config.principals:
        return PrincipalMap()
    entries: dict[str, dict[str, Identity]] = {}
    for principal, per_cluster in config.principals.items():
        if principal != EVERYONE and ":" not in principal:
            raise ConfigError(
                f"gateway principals: '{principal}' is not a principal (write User:NAME, or *)"
            )
        entries[principal] = {
            name: _identity(principal, name, clusters, overrides)
            for name, overrides in per_cluster.items()
        }
    return PrincipalMap(entries)


def _identity(
    principal: str,
    name: str,
    clusters: Mapping[str, ClusterConfig],
    overrides: Mapping[str, object],
) -> Identity:
    where = f"gateway principals: {principal}: {name}"
    cluster = clusters.get(name)
    if cluster is None:
        raise ConfigError(f"{where}: no such cluster (known: {', '.join(sorted(clusters))})")
    merged = cluster.model_copy(update={"properties": {**cluster.properties, **overrides}})
    sasl = sasl_factory(merged)
    if sasl is None:
        raise ConfigError(f"{where}: the cluster takes no credentials (security.protocol)")
    return Identity(principal, sasl)

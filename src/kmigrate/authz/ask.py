"""The probes asked of a cluster as each identity kmigrate can speak for: the one
clusters.yaml configures for the cluster, and any others the operator named (entries
that reach the same cluster with other credentials)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from kmigrate.authz.probes import Answers, Probe, choose, differences
from kmigrate.config import ClusterConfig
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.admin.authorization import ALLOWED


def principal_of(cluster: ClusterConfig) -> str:
    """Who the cluster sees (as far as the client config tells): the SASL user, or
    ANONYMOUS on a listener without authentication."""
    props = cluster.as_librdkafka()
    protocol = props.get("security.protocol", "plaintext").lower()
    if "sasl" in protocol and props.get("sasl.username"):
        return f"User:{props['sasl.username']}"
    if protocol in ("plaintext", "ssl"):
        return "User:ANONYMOUS" if protocol == "plaintext" else f"TLS client of {cluster.name}"
    return f"{protocol} client of {cluster.name}"


def probe_set(admin: ClusterAdmin) -> list[Probe]:
    """The probes for the cluster ``admin`` reaches, from its ACLs and topics."""
    return choose(admin.list_acls(), (t.name for t in admin.list_topics()))


def answers(admin: ClusterAdmin, probes: Sequence[Probe]) -> Answers:
    """Every probe's answer, as the identity ``admin`` speaks for."""
    who = principal_of(admin.cluster)
    return {
        f"{who}: {probe.key}": admin.authorization_answer(probe.action, probe.resource)
        for probe in probes
    }


@dataclass(frozen=True)
class Probed:
    """A probe set and the answers it got: asked again later, it must get the same."""

    probes: tuple[Probe, ...]
    answers: Answers

    @property
    def summary(self) -> str:
        denied = sum(1 for a in self.answers.values() if a != ALLOWED)
        return f"{len(self.answers)} probe(s), {denied} denied"

    def again(self, identities: Sequence[ClusterConfig]) -> Probed:
        """The same probes asked now as each identity, through clients of their own (one
        that knew a broker before its restart may not reach it again for a while)."""
        return Probed(self.probes, _asked(identities, self.probes))

    def differences(self, now: Probed) -> list[str]:
        return differences(self.answers, now.answers)

    def to_json(self) -> str:
        return json.dumps(
            {"probes": [[p.action, p.resource] for p in self.probes], "answers": self.answers},
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> Probed:
        raw = json.loads(text)
        probes = tuple(Probe(str(a), str(r)) for a, r in raw["probes"])
        return cls(probes, {str(k): str(v) for k, v in raw["answers"].items()})


def first_look(identities: Sequence[ClusterConfig]) -> Probed:
    """The probes for the cluster (chosen as the first identity sees it), and their
    answers now as each identity (client configs reaching the same cluster)."""
    with ClusterAdmin(identities[0]) as admin:
        probes = tuple(probe_set(admin))
    return Probed(probes, _asked(identities, probes))


def _asked(identities: Sequence[ClusterConfig], probes: Sequence[Probe]) -> Answers:
    found: Answers = {}
    for identity in identities:
        with ClusterAdmin(identity) as admin:
            found |= answers(admin, probes)
    return found

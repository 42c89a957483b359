"""Everything a user relies on, read before and after an operation and compared: the
metadata (kmigrate.kraft.snapshot: topics, replicas, topic and dynamic broker configs,
ACLs, group offsets, SCRAM credentials; plus client quotas, read here with Kafka's own
ConfigCommand since confluent-kafka cannot), the authorization probes' answers
(kmigrate.authz: the same probes asked before and after), and every
acknowledged record once and in order in its partition.

``furnish`` gives a cluster what a production cluster holds (SCRAM users, quotas of every
entity kind, dynamic broker configs, topic configs, ACLs, idle groups with offsets).
Shared by the kill tests and bench/killpoints.py.
"""

from __future__ import annotations

import itertools
import re
import secrets
import subprocess
import tempfile
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from pydantic import SecretStr

from harness.helpers import java_on, wait_for
from kmigrate.authz.ask import Probed, first_look
from kmigrate.config import ClusterConfig
from kmigrate.errors import ClusterUnavailableError, ClusterUnreachableError, TopicNotFoundError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import read_partition
from kmigrate.kraft import snapshot
from kmigrate.model.cluster import AclEntry, TopicPartitionOffset

# ConfigCommand's entity kinds, alone and combined (user and client-id together)
QUOTA_ENTITIES = (("users",), ("clients",), ("ips",), ("users", "clients"))
_QUOTA_LINE = re.compile(r"^Quota configs for (.+) are (.*)$")


@dataclass(frozen=True)
class Picture:
    """What users see of one cluster at one moment."""

    metadata: snapshot.Snapshot
    probed: Probed | None  # the authorization probes and their answers; None: no authorizer
    logins: dict[str, str] | None = None  # "user/MECHANISM" -> "ok"/"refused"; None: no SASL

    @property
    def probes(self) -> dict[str, str] | None:
        return None if self.probed is None else self.probed.answers


Passwords = dict[tuple[str, str], str]  # (user, mechanism) -> password, as furnished
SCRAM_USERS = (("app-0", "SCRAM-SHA-256", 8192), ("app-0", "SCRAM-SHA-512", 4096),
               ("app-1", "SCRAM-SHA-512", 10000))  # fmt: skip


def config_command(jars: Path, cluster: ClusterConfig, *args: str) -> str:
    """Kafka's ConfigCommand (from the 3.9 jars, which still have it) against ``cluster``,
    connecting as its Java clients do (``java_properties``: SASL on a secure cluster)."""
    with tempfile.NamedTemporaryFile("w", suffix=".properties") as props:
        props.write("".join(f"{k}={v}\n" for k, v in java_client_properties(cluster).items()))
        props.flush()
        done = subprocess.run(
            [*java_on(jars), "-Xmx256m", "kafka.admin.ConfigCommand",
             "--bootstrap-server", cluster.bootstrap_servers, "--command-config", props.name,
             *args],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    if done.returncode != 0:
        raise AssertionError(f"ConfigCommand {' '.join(args)}: {done.stderr[-800:]}")
    return done.stdout


def java_client_properties(cluster: ClusterConfig) -> dict[str, str]:
    """What a Java client needs to connect as ``cluster`` configures: its own
    ``java_properties``, else the SASL settings of its librdkafka ``properties``."""
    if cluster.java_properties:
        return {k: _revealed(v) for k, v in cluster.java_properties.items()}
    conf = cluster.as_librdkafka()
    if "sasl" not in conf.get("security.protocol", "").lower():
        return {}
    module = "org.apache.kafka.common.security.scram.ScramLoginModule"
    return {
        "security.protocol": conf["security.protocol"],
        "sasl.mechanism": conf["sasl.mechanism"],
        "sasl.jaas.config": f'{module} required username="{conf["sasl.username"]}" '
        f'password="{conf["sasl.password"]}";',
    }


def _revealed(value: str | SecretStr) -> str:
    return value.get_secret_value() if isinstance(value, SecretStr) else value


def quotas(jars: Path, cluster: ClusterConfig) -> dict[str, dict[str, str]]:
    """Every client quota: entity ("user-principal 'alice', client-id 'app'") -> quota ->
    value, for users, client ids, IPs and user/client-id pairs."""
    found: dict[str, dict[str, str]] = {}
    for kinds in QUOTA_ENTITIES:
        args = [a for kind in kinds for a in ("--entity-type", kind)]
        for line in config_command(jars, cluster, "--describe", *args).splitlines():
            matched = _QUOTA_LINE.match(line.strip())
            if matched:
                pairs = (p.split("=", 1) for p in matched.group(2).split(", ") if "=" in p)
                found[matched.group(1)] = {k: v for k, v in pairs}
    return found


def probed(cluster: ClusterConfig, before: Picture | None = None) -> Probed | None:
    """The authorization probes (kmigrate.authz) and their answers now: the set chosen
    from the cluster's ACLs, or ``before``'s set asked again; None on a cluster without
    an authorizer (nothing to probe)."""
    if before is not None and before.probed is not None:
        return before.probed.again([cluster])
    with ClusterAdmin(cluster) as admin:
        if not admin.broker_config().get("authorizer.class.name"):
            return None
    return first_look([cluster])


def picture(
    cluster: ClusterConfig,
    jars: Path | None = None,
    ignore: tuple[str, ...] = (),
    passwords: Passwords | None = None,
    before: Picture | None = None,
) -> Picture:
    """The cluster as users see it (quotas only when Kafka's ``jars`` are given; SCRAM
    logins with ``passwords`` on a SASL cluster; ``before``'s probes asked again); the
    topics and groups named in ``ignore`` (the workload's own) left out."""
    with ClusterAdmin(cluster) as admin:
        taken = snapshot.take(admin)
    for name in ignore:
        taken.topics.pop(name, None)
        taken.configs.pop(name, None)
        taken.groups.pop(name, None)
    if jars is not None:
        taken = replace(taken, quotas=quotas(jars, cluster))
    return Picture(taken, probed(cluster, before), logins(cluster, passwords or {}))


def logins(cluster: ClusterConfig, passwords: Passwords) -> dict[str, str] | None:
    """Whether each SCRAM user of the cluster's mechanism logs in with its password, and
    one with a wrong password is refused; None on a cluster without SASL."""
    base = cluster.as_librdkafka()
    mechanism = base.get("sasl.mechanism", "")
    if not base.get("security.protocol", "").startswith("SASL") or not passwords:
        return None
    tried = {f"{u}/{m}": p for (u, m), p in passwords.items() if m == mechanism}
    if tried:
        user = sorted(tried)[0]
        tried[f"{user} with a wrong password"] = "wrong-" + tried[user]
    return {name: _login(base, name.split("/")[0].split()[0], p) for name, p in tried.items()}


def _login(base: dict[str, str], user: str, password: str) -> str:
    client = AdminClient({**base, "sasl.username": user, "sasl.password": password})
    try:
        client.list_topics(timeout=15)
        return "ok"
    except KafkaException:
        return "refused"


def differences(before: Picture, after: Picture) -> list[str]:
    """What changed that must not; empty when users see the same cluster."""
    found = snapshot.differences(before.metadata, after.metadata)
    if before.logins != after.logins:
        found.append(f"SCRAM logins: {before.logins}, now {after.logins}")
    if before.probed is not None and after.probed is not None:
        found += [f"authorization probe {d}" for d in before.probed.differences(after.probed)]
    elif before.probed is not None or after.probed is not None:
        found.append("the authorization probes could be asked only once")
    return found


def furnish(cluster: ClusterConfig, jars: Path | None, topics: int, brokers: int) -> Passwords:
    """What a production cluster holds: ``topics`` topics with configs and an idle group
    each, ACLs (when the cluster has an authorizer), SCRAM users of both mechanisms,
    dynamic broker configs (each broker's and the default) and, with Kafka's ``jars``,
    quotas of every entity kind. Returns the SCRAM users' passwords (for login checks;
    never printed)."""
    passwords: Passwords = {}
    with ClusterAdmin(cluster) as admin:
        for i in range(topics):
            admin.create_topic(f"kept-{i:02}", 3, replication_factor=brokers,
                               configs={"retention.ms": str(86_400_000 + i)})  # fmt: skip
        for i in range(topics):
            offsets = [TopicPartitionOffset(f"kept-{i:02}", p, i) for p in range(3)]
            wait_for(lambda o=offsets, g=f"idle-{i:02}": committed(admin, g, o), timeout=60,
                     message="the coordinator knowing the new topic")  # fmt: skip
        with_acls = bool(admin.broker_config().get("authorizer.class.name"))
        admin.create_acls(
            [] if not with_acls else  # a cluster without an authorizer takes no ACLs
            [AclEntry("TOPIC", f"kept-{i:02}", "LITERAL", f"User:app-{i}", "*", "READ", "ALLOW")
             for i in range(topics)]
            + [AclEntry("GROUP", "team-", "PREFIXED", "User:app-0", "*", "READ", "ALLOW"),
               AclEntry("TOPIC", "kept-00", "LITERAL", "User:mallory", "*", "WRITE", "DENY"),
               # PLAINTEXT: kmigrate and this harness read as User:ANONYMOUS, which an
               # ACL on a topic would otherwise hide the topic from
               AclEntry("TOPIC", "kept-", "PREFIXED", "User:ANONYMOUS", "*", "ALL", "ALLOW")]
        )  # fmt: skip
        for user, mechanism, iterations in SCRAM_USERS:
            passwords[(user, mechanism)] = secrets.token_hex(12)
            admin.upsert_scram_credential(user, mechanism, iterations, passwords[(user, mechanism)])
        for broker in range(1, brokers + 1):
            admin.set_configs(
                "broker", str(broker), {"log.cleaner.backoff.ms": str(15_000 + broker)}
            )
    if jars is not None:  # librdkafka cannot name the cluster-wide default broker
        config_command(jars, cluster, "--alter", "--entity-type",
                       "brokers", "--entity-default", "--add-config",
                       "max.connections.per.ip=10000")  # fmt: skip
        _quotas(jars, cluster)
    return passwords


def committed(admin: ClusterAdmin, group: str, offsets: list[TopicPartitionOffset]) -> bool:
    """Whether ``group``'s commits were set to ``offsets`` (False: try again)."""
    try:
        admin.alter_group_offsets(group, offsets)
        return True
    except (TopicNotFoundError, ClusterUnavailableError, ClusterUnreachableError):
        return False  # the coordinator not knowing the topic yet, or still loading


def _quotas(jars: Path, cluster: ClusterConfig) -> None:
    for entity, configs in (
        (("--entity-type", "users", "--entity-name", "app-0"),
         "producer_byte_rate=1048576,consumer_byte_rate=2097152"),
        (("--entity-type", "users", "--entity-default"), "request_percentage=200"),
        (("--entity-type", "clients", "--entity-name", "reporting"), "consumer_byte_rate=524288"),
        (("--entity-type", "users", "--entity-name", "app-1", "--entity-type", "clients",
          "--entity-name", "loader"), "producer_byte_rate=4194304"),
        (("--entity-type", "ips", "--entity-name", "127.0.0.2"), "connection_creation_rate=50"),
    ):  # fmt: skip
        config_command(jars, cluster, "--alter", "--add-config", configs, *entity)


def record_problems(cluster: ClusterConfig, topic: str, acked: set[bytes]) -> list[str]:
    """Every acknowledged record ("r<n>") in the log once, and in each partition in the
    order it was sent; what is wrong otherwise (empty when nothing is)."""
    with ClusterAdmin(cluster) as admin:
        marks = admin.watermarks(topic)
    values: list[bytes] = []
    problems: list[str] = []
    for w in marks:
        numbers = []
        for record in read_partition(cluster, topic, w.partition, 0, w.high):
            values.append(record.value or b"")
            numbers.append(int((record.value or b"r-1")[1:]))
        backwards = [b for a, b in itertools.pairwise(numbers) if b <= a]
        if backwards:
            problems.append(f"partition {w.partition}: r{backwards[0]} written out of order")
    counts: dict[bytes, int] = defaultdict(int)
    for value in values:
        counts[value] += 1
    repeated = sorted(v for v, n in counts.items() if n > 1)
    lost = sorted(acked - set(counts))
    if repeated:
        problems.append(f"{len(repeated)} record(s) written twice, e.g. {repeated[0]!r}")
    if lost:
        problems.append(f"{len(lost)} acknowledged record(s) lost, e.g. {lost[0]!r}")
    return problems

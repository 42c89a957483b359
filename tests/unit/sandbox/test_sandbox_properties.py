from pathlib import Path

import pytest

from kmigrate.sandbox.properties import (
    LOG4J1,
    LOG4J2,
    logging_config,
    logging_flag,
    server_properties,
)
from kmigrate.sandbox.state import BrokerNode, SandboxCluster

ADMIN_PASSWORD = "adm1n-Pw-xyz"
INTERNAL_RF_KEYS = (
    "offsets.topic.replication.factor",
    "transaction.state.log.replication.factor",
    "share.coordinator.state.topic.replication.factor",
    "default.replication.factor",
)


def _cluster(brokers=3, voters=None, secure=False, version="4.1.0") -> SandboxCluster:
    voters = min(3, brokers) if voters is None else voters
    nodes = tuple(
        BrokerNode(
            node_id=i + 1,
            port=19092 + i,
            controller_port=29092 + i,
            rack=f"rack-{i % 3}",
            voter=i < voters,
        )
        for i in range(brokers)
    )
    return SandboxCluster(
        name="src", cluster_id="abc", kafka_version=version, secure=secure, brokers=nodes
    )


def _props(cluster: SandboxCluster, index=0, password=ADMIN_PASSWORD) -> dict[str, str]:
    text = server_properties(cluster, cluster.brokers[index], Path("/data/b"), password)
    assert text.endswith("\n")
    props = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        assert sep, line
        assert key not in props, f"duplicate key {key}"
        props[key] = value
    return props


def _listener_hosts(value: str) -> list[str]:
    return [entry.split("://", 1)[1].rsplit(":", 1)[0] for entry in value.split(",")]


@pytest.mark.parametrize("secure", [False, True])
@pytest.mark.parametrize("index", [0, 3])
def test_listeners_bind_only_to_loopback(secure, index):
    props = _props(_cluster(brokers=4, secure=secure), index)
    assert _listener_hosts(props["listeners"])
    assert set(_listener_hosts(props["listeners"])) == {"127.0.0.1"}
    assert set(_listener_hosts(props["advertised.listeners"])) == {"127.0.0.1"}


def test_broker_listens_on_its_own_port():
    cluster = _cluster()
    props = _props(cluster, 1)
    assert "PLAINTEXT://127.0.0.1:19093" in props["listeners"].split(",")
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19093"


def test_voter_is_broker_and_controller_with_a_controller_listener():
    cluster = _cluster(brokers=4)
    props = _props(cluster, 0)
    assert props["process.roles"] == "broker,controller"
    assert "CONTROLLER://127.0.0.1:29092" in props["listeners"].split(",")
    assert props["controller.listener.names"] == "CONTROLLER"


def test_non_voter_is_only_a_broker_without_controller_listener():
    cluster = _cluster(brokers=4)
    props = _props(cluster, 3)
    assert props["process.roles"] == "broker"
    assert "CONTROLLER" not in props["listeners"]
    assert "29095" not in props["listeners"]


@pytest.mark.parametrize("brokers,voters", [(1, 1), (3, 1), (3, 3), (5, 3)])
def test_quorum_voters_list_exactly_the_voters(brokers, voters):
    cluster = _cluster(brokers=brokers, voters=voters)
    expected = {f"{b.node_id}@127.0.0.1:{b.controller_port}" for b in cluster.brokers if b.voter}
    for index in range(brokers):
        entries = _props(cluster, index)["controller.quorum.voters"].split(",")
        assert len(entries) == voters
        assert set(entries) == expected


def test_node_id_rack_and_log_dir_are_set():
    cluster = _cluster()
    text = server_properties(cluster, cluster.brokers[2], Path("/tmp/sb/broker-3/data"), None)
    assert "node.id=3\n" in text
    assert "broker.rack=rack-2\n" in text
    assert "log.dirs=/tmp/sb/broker-3/data\n" in text


@pytest.mark.parametrize("brokers", [1, 2, 3, 4, 5])
def test_internal_topic_replication_never_exceeds_broker_count(brokers):
    props = _props(_cluster(brokers=brokers))
    for key in INTERNAL_RF_KEYS:
        assert 1 <= int(props[key]) <= brokers, key
    assert int(props["transaction.state.log.min.isr"]) <= int(
        props["transaction.state.log.replication.factor"]
    )
    assert int(props["share.coordinator.state.topic.min.isr"]) <= int(
        props["share.coordinator.state.topic.replication.factor"]
    )


def test_topics_are_not_auto_created():
    assert _props(_cluster())["auto.create.topics.enable"] == "false"


# ------------------------------------------------------------------ secure clusters


def test_secure_cluster_uses_sasl_plaintext_with_scram_sha_512():
    props = _props(_cluster(secure=True))
    assert props["listeners"].startswith("SASL_PLAINTEXT://127.0.0.1:")
    assert props["advertised.listeners"].startswith("SASL_PLAINTEXT://127.0.0.1:")
    assert props["inter.broker.listener.name"] == "SASL_PLAINTEXT"
    assert "SASL_PLAINTEXT:SASL_PLAINTEXT" in props["listener.security.protocol.map"]
    assert props["sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert props["sasl.mechanism.inter.broker.protocol"] == "SCRAM-SHA-512"


def test_secure_cluster_has_scram_jaas_for_admin_on_its_listener():
    props = _props(_cluster(secure=True))
    jaas = props["listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"]
    assert "ScramLoginModule required" in jaas
    assert 'username="admin"' in jaas
    assert f'password="{ADMIN_PASSWORD}"' in jaas


def test_secure_cluster_uses_standard_authorizer_and_denies_by_default():
    props = _props(_cluster(secure=True))
    assert props["authorizer.class.name"] == (
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    )
    assert props["allow.everyone.if.no.acl.found"] == "false"
    assert "User:admin" in props["super.users"].split(";")


def test_non_admin_client_user_is_not_a_super_user():
    assert "User:client" not in _props(_cluster(secure=True))["super.users"].split(";")


def test_plaintext_cluster_has_no_sasl_or_authorizer():
    props = _props(_cluster(secure=False), password=None)
    assert props["listeners"].startswith("PLAINTEXT://127.0.0.1:")
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    assert not any(k.startswith("sasl.") for k in props)
    assert "authorizer.class.name" not in props
    assert "super.users" not in props
    assert not any("jaas" in k for k in props)


def test_admin_password_is_not_written_for_a_plaintext_cluster():
    cluster = _cluster(secure=False)
    text = server_properties(cluster, cluster.brokers[0], Path("/d"), ADMIN_PASSWORD)
    assert ADMIN_PASSWORD not in text


# ------------------------------------------------------------------ logging


@pytest.mark.parametrize("version", ["4.0.0", "4.1.0", "4.2.1"])
def test_kafka_4_uses_log4j2(version):
    name, content = logging_config(version)
    assert name == "log4j2.properties"
    assert content == LOG4J2
    assert logging_flag(version, Path("/x/log4j2.properties")) == (
        "-Dlog4j2.configurationFile=/x/log4j2.properties"
    )


@pytest.mark.parametrize("version", ["3.7.0", "3.9.1"])
def test_kafka_3_uses_log4j_1(version):
    name, content = logging_config(version)
    assert name == "log4j.properties"
    assert content == LOG4J1
    assert "log4j.rootLogger" in content
    assert logging_flag(version, Path("/x/log4j.properties")) == (
        "-Dlog4j.configuration=file:/x/log4j.properties"
    )


def test_log4j2_config_is_log4j2_syntax():
    assert "rootLogger.level" in LOG4J2
    assert "log4j.rootLogger" not in LOG4J2


@pytest.mark.parametrize(("secure", "listener"), [(False, "SSL"), (True, "SASL_SSL")])
def test_a_tls_cluster_listens_with_tls_and_its_own_certificates(tmp_path, secure, listener):
    import dataclasses

    from kmigrate.sandbox import tls

    cluster = dataclasses.replace(_cluster(brokers=1, secure=secure), tls=True)
    files = tls.ensure_certificates(tmp_path, "src", ())
    stores = tls.broker_properties(files, client_certificates=False)
    text = server_properties(cluster, cluster.brokers[0], Path("/d"), ADMIN_PASSWORD, stores)
    props = dict(line.split("=", 1) for line in text.splitlines())
    assert props["advertised.listeners"] == f"{listener}://127.0.0.1:19092"
    assert props["inter.broker.listener.name"] == listener
    assert props["ssl.keystore.type"] == "PEM" and props["ssl.keystore.location"] == str(
        files.broker
    )
    assert props["ssl.client.auth"] == "none" and "ssl.principal.mapping.rules" not in props
    if secure:
        assert f"listener.name.{listener.lower()}.scram-sha-512.sasl.jaas.config" in props
    # A client trusting only the cluster's CA accepts the broker's certificate for
    # 127.0.0.1 (as librdkafka and Java check host names by default).
    client, _ = _handshake(files, None)
    assert client.getpeercert()["subjectAltName"] == (
        ("IP Address", "127.0.0.1"), ("DNS", "localhost")
    )  # fmt: skip
    assert tls.ensure_certificates(tmp_path, "src", ()) == files, "made once"
    assert oct((tmp_path / "tls" / "broker.pem").stat().st_mode & 0o777) == "0o600"


def test_an_mtls_cluster_asks_for_client_certificates_and_names_principals_by_them(tmp_path):
    """`--tls --mtls` (ZooKeeper mode): brokers require a certificate of the cluster's CA,
    map its CN to the principal, and only the brokers' and the admin's are super users;
    the admin's certificate passes a server asking for one."""
    import dataclasses

    from kmigrate.kraft.certificate import mapped
    from kmigrate.sandbox import tls

    cluster = dataclasses.replace(_cluster(brokers=1), tls=True, mtls=True,
                                  zookeeper_connect="127.0.0.1:2181/kafka")  # fmt: skip
    files = tls.ensure_certificates(tmp_path, "src", ("admin", "client"))
    stores = tls.broker_properties(files, client_certificates=True)
    text = server_properties(cluster, cluster.brokers[0], Path("/d"), None, stores)
    props = dict(line.split("=", 1) for line in text.splitlines())
    assert props["ssl.client.auth"] == "required"
    assert props["super.users"] == "User:src broker;User:src admin"
    assert props["allow.everyone.if.no.acl.found"] == "false"
    rules = props["ssl.principal.mapping.rules"]
    assert mapped("CN=src broker", rules) == tls.principal("src", "broker")
    _, server = _handshake(files, "admin")
    subject = dict(pair[0] for pair in server.getpeercert()["subject"])
    assert mapped(f"CN={subject['commonName']}", rules) == tls.principal("src", "admin")
    assert oct(files.client("client")[1].stat().st_mode & 0o777) == "0o600"


def _handshake(files, user):
    """A TLS handshake between a client trusting only the cluster's CA (presenting
    ``user``'s certificate, if given) and a server with the broker's certificate (asking
    for a client certificate of the CA when ``user`` is given)."""
    import contextlib
    import ssl

    client = ssl.create_default_context(cafile=str(files.ca))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(str(files.broker))
    if user:
        certificate, key = files.client(user)
        client.load_cert_chain(str(certificate), str(key))
        server.verify_mode = ssl.CERT_REQUIRED
        server.load_verify_locations(cafile=str(files.ca))
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO()
    c = client.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    s = server.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(10):  # the handshake's messages passed by hand, both ways
        for end in (c, s):
            with contextlib.suppress(ssl.SSLWantReadError):
                end.do_handshake()
        s_in.write(outgoing.read())
        incoming.write(s_out.read())
    return c, s


def test_internal_plaintext_puts_the_brokers_on_a_listener_of_their_own():
    """`--secure --internal-plaintext` in ZooKeeper mode: clients log in with SCRAM on the
    broker's port, the brokers talk PLAINTEXT on its second port, everyone is allowed
    where no ACL says (the brokers are User:ANONYMOUS to each other), admin super user."""
    from dataclasses import replace

    cluster = replace(
        _cluster(brokers=2, secure=True, version="3.9.1"),
        zookeeper_connect="127.0.0.1:2181/kafka",
        internal_plaintext=True,
    )
    props = _props(cluster, 1)
    assert props["listeners"] == "SASL_PLAINTEXT://127.0.0.1:19093,INTERNAL://127.0.0.1:29093"
    assert props["advertised.listeners"] == props["listeners"]
    assert (
        props["listener.security.protocol.map"]
        == "SASL_PLAINTEXT:SASL_PLAINTEXT,INTERNAL:PLAINTEXT"
    )
    assert props["inter.broker.listener.name"] == "INTERNAL"
    assert props["sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert "sasl.mechanism.inter.broker.protocol" not in props
    assert props["allow.everyone.if.no.acl.found"] == "true"
    assert props["super.users"] == "User:admin"
    secure = _props(replace(cluster, internal_plaintext=False), 1)
    assert secure["inter.broker.listener.name"] == "SASL_PLAINTEXT"
    assert secure["allow.everyone.if.no.acl.found"] == "false"


def test_internal_plaintext_without_secure_zookeeper_mode_is_refused_first(tmp_path):
    from kmigrate.errors import ConfigError
    from kmigrate.sandbox import manager

    for request in (
        manager.UpRequest(clusters=["a"], internal_plaintext=True),
        manager.UpRequest(clusters=["a"], internal_plaintext=True, zookeeper="zk"),
        manager.UpRequest(clusters=["a"], internal_plaintext=True, secure=True),
    ):
        with pytest.raises(
            ConfigError, match="--internal-plaintext needs --secure and --zookeeper"
        ):
            manager.up(tmp_path / "s", request)
        assert not (tmp_path / "s").exists(), "nothing made"

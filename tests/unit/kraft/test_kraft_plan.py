"""The KRaft migration's plan (pure): what each roll sets and removes, controller ids
that never clash with a broker's, what Kafka's guide forbids refused by name, the
revert rolls undoing the rolls, and the metadata comparison."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmigrate.errors import ConfigError, ConflictError
from kmigrate.kraft.plan import (
    MIGRATION_FLAG,
    BrokerView,
    ClusterView,
    parse_plan,
    plan_kraft,
    trust_of,
)
from kmigrate.kraft.sasl import SECRET
from kmigrate.kraft.snapshot import Snapshot, differences
from kmigrate.kraft.trust import (
    ALLOW_EVERYONE,
    CONTROLLER_USER,
    KRAFT_AUTHORIZER,
    SUPER_USERS,
    ZK_AUTHORIZER,
)

CONNECT = "zk1:2181,zk2:2181/kafka"


def _broker(broker_id: int, **changes: object) -> BrokerView:
    found = BrokerView(
        broker_id=broker_id, host=f"kafka-{broker_id}", port=9092, ibp="3.9-IV0",
        zookeeper_connect=CONNECT, process_roles=None, migration_enabled=False,
        inter_broker_listener="PLAINTEXT", protocol_map="PLAINTEXT:PLAINTEXT",
        log_dirs="/data", authorizer=ZK_AUTHORIZER, hidden=(ALLOW_EVERYONE,),
    )  # fmt: skip
    return replace(found, **changes)


def _view(*brokers: BrokerView) -> ClusterView:
    brokers = brokers or (_broker(1), _broker(2), _broker(3))
    return ClusterView("legacy", "abc123", brokers, tuple(b.broker_id for b in brokers))


CONTROLLERS = [("c1", 9093), ("c2", 9093), ("c3", 9093)]
ONE = CONTROLLERS[:1]  # a quorum of one elects itself: no super user needed (below)
HIDDEN = {ALLOW_EVERYONE: "true"}  # what the operator read in the brokers' server.properties


def test_the_rolls_follow_the_guide() -> None:
    plan = plan_kraft(_view(), ONE, CONNECT, HIDDEN)
    assert plan.controller_ids == [3000]
    assert plan.voters == "3000@c1:9093"
    controller = plan.controller_properties(3000)
    assert controller["process.roles"] == "controller" and controller["node.id"] == "3000"
    assert controller[MIGRATION_FLAG] == "true" and controller["zookeeper.connect"] == CONNECT
    assert controller["listeners"] == "CONTROLLER://c1:9093"
    assert controller["authorizer.class.name"] == KRAFT_AUTHORIZER
    # the controllers decide as the brokers did: the same default, no super user added
    assert controller[ALLOW_EVERYONE] == "true" and "super.users" not in controller
    finalized = plan.controller_properties(3000, finalized=True)
    assert MIGRATION_FLAG not in finalized and "zookeeper.connect" not in finalized

    broker = {"broker.id": "2", "zookeeper.connect": CONNECT, "log.dirs": "/data",
              "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT",
              "authorizer.class.name": ZK_AUTHORIZER}  # fmt: skip
    migrating = plan.roll1.applied(broker)
    assert migrating[MIGRATION_FLAG] == "true" and migrating["zookeeper.connect"] == CONNECT
    assert migrating["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    assert migrating["inter.broker.protocol.version"] == "3.9"
    kraft = plan.roll2_for(2).applied(migrating)
    assert kraft["process.roles"] == "broker" and kraft["node.id"] == "2"
    for gone in ("broker.id", "zookeeper.connect", MIGRATION_FLAG, "inter.broker.protocol.version"):
        assert gone not in kraft
    assert kraft["authorizer.class.name"] == KRAFT_AUTHORIZER

    # the revert rolls undo them: KRaft -> migration mode -> ZooKeeper mode as before
    back = plan.revert_roll2_for(2).applied(kraft)
    assert back["broker.id"] == "2" and "node.id" not in back and "process.roles" not in back
    assert back["zookeeper.connect"] == CONNECT and back[MIGRATION_FLAG] == "true"
    assert back["authorizer.class.name"] == ZK_AUTHORIZER
    original = plan.revert_roll1().applied(back)
    assert {k: v for k, v in original.items() if k != "inter.broker.protocol.version"} == broker


def test_the_controllers_authorize_exactly_as_the_brokers() -> None:
    supers = "User:admin;User:ANONYMOUS"
    view = _view(*(_broker(i, hidden=(ALLOW_EVERYONE, SUPER_USERS)) for i in (1, 2)))
    plan = plan_kraft(view, CONTROLLERS, CONNECT, {ALLOW_EVERYONE: "false", SUPER_USERS: supers})
    controller = plan.controller_properties(3000, finalized=True)
    assert (controller[ALLOW_EVERYONE], controller[SUPER_USERS]) == ("false", supers)
    custom = _broker(1, authorizer_settings=(("principal.builder.class", "com.example.Pb"),))
    planned = plan_kraft(_view(custom, _broker(2, authorizer_settings=custom.authorizer_settings)),
                         ONE, CONNECT, HIDDEN)  # fmt: skip
    assert planned.controller_config["principal.builder.class"] == "com.example.Pb"


@pytest.mark.parametrize(
    ("view", "given", "says"),
    [(_view(), {}, "broker 1 sets allow.everyone.if.no.acl.found, whose value Kafka does not"),
     (_view(), {**HIDDEN, SUPER_USERS: "User:x"}, "--authorizer-setting super.users: broker 1"),
     (_view(_broker(1), _broker(2, hidden=())), HIDDEN, "brokers 1 and 2 authorize differently")],
)  # fmt: skip
def test_a_plan_that_would_change_who_may_do_what_is_refused(
    view: ClusterView, given: dict[str, str], says: str
) -> None:
    with pytest.raises((ConfigError, ConflictError), match=says.replace(".", r"\.")):
        plan_kraft(view, CONTROLLERS, CONNECT, given)


def test_the_plan_reads_back_as_written() -> None:
    plan = plan_kraft(_view(), ONE, CONNECT, HIDDEN)
    assert parse_plan(plan.to_yaml(), "p.yaml") == plan
    open_brokers = _view(*(_broker(i, authorizer=None) for i in (1, 2, 3)))
    three = plan_kraft(open_brokers, CONTROLLERS, CONNECT)
    assert three.voters == "3000@c1:9093,3001@c2:9093,3002@c3:9093"
    assert parse_plan(three.to_yaml(), "p.yaml") == three


@given(st.sets(st.integers(0, 100_000), min_size=1, max_size=6))
def test_controller_ids_never_clash_with_a_broker(ids: set[int]) -> None:
    view = _view(*(_broker(i, authorizer=None) for i in sorted(ids)))
    plan = plan_kraft(view, CONTROLLERS, CONNECT)
    assert not set(plan.controller_ids) & ids


def test_a_quorum_the_brokers_cannot_give_a_super_user_gets_a_controller_principal() -> None:
    """KRaft's StandardAuthorizer answers only super users until it has loaded the
    metadata, and a quorum of several controllers must elect a leader before that (seen:
    Vote refused with AuthorizerNotReadyException, no leader, ever). On PLAINTEXT the
    nodes would be User:ANONYMOUS, so the controller listener gets kmigrate's own
    principal over SASL PLAIN, a super user of the controllers alone."""
    plan = plan_kraft(_view(), CONTROLLERS, CONNECT, HIDDEN, None, "kraft.yaml.secret")
    assert (plan.controller_user, plan.controller_secret_file) == (
        CONTROLLER_USER,
        "kraft.yaml.secret",
    )
    principal = f"User:{CONTROLLER_USER}"
    for node in plan.controller_ids:
        controller = plan.controller_properties(node)
        assert (
            controller["listener.security.protocol.map"]
            == "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
        )
        assert controller[SUPER_USERS] == principal and controller[ALLOW_EVERYONE] == "true"
        jaas = controller["listener.name.controller.plain.sasl.jaas.config"]
        assert (
            f'username="{CONTROLLER_USER}"' in jaas and f'user_{CONTROLLER_USER}="{SECRET}"' in jaas
        )
        assert controller["sasl.mechanism.controller.protocol"] == "PLAIN"
        assert "sasl.enabled.mechanisms" not in controller  # the brokers' listener: as it was
    broker = {"broker.id": "1", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT",
              "authorizer.class.name": ZK_AUTHORIZER}  # fmt: skip
    for change in (plan.roll1, plan.roll2_for(1)):
        rolled = change.revealed("s3cret").applied(broker)
        assert rolled["listener.security.protocol.map"].endswith(",CONTROLLER:SASL_PLAINTEXT")
        assert 'password="s3cret"' in rolled["listener.name.controller.plain.sasl.jaas.config"]
        # no client-facing listener gains a mechanism or a user; the brokers' supers stay
        assert not {"sasl.enabled.mechanisms", SUPER_USERS, "listeners"} & set(rolled)
    assert "s3cret" not in plan.to_yaml() and SECRET in plan.to_yaml()
    assert parse_plan(plan.to_yaml(), "p.yaml") == plan
    reverted = plan.revert_roll1().applied(plan.roll1.revealed("s3cret").applied(broker))
    assert not any(k.startswith(("listener.name.controller", "sasl.")) for k in reverted)

    # the operator's super users stay, with the controller principal added
    supers = {**HIDDEN, SUPER_USERS: "User:admin"}
    view = _view(*(_broker(i, hidden=(ALLOW_EVERYONE, SUPER_USERS)) for i in (1, 2)))
    five = [*CONTROLLERS, ("c4", 9093), ("c5", 9093)]
    planned = plan_kraft(view, five, CONNECT, supers, None, "s")
    assert planned.controller_ids == [3000, 3001, 3002, 3003, 3004]
    assert planned.controller_config[SUPER_USERS] == f"User:admin;{principal}"
    # where ANONYMOUS is enough, nothing changes: one controller with everyone allowed, or
    # ANONYMOUS a super user of the brokers' own
    assert plan_kraft(_view(), ONE, CONNECT, HIDDEN).controller_user is None
    anonymous = {**HIDDEN, SUPER_USERS: "User:ANONYMOUS"}
    assert plan_kraft(view, CONTROLLERS, CONNECT, anonymous).controller_user is None
    # one controller, but nobody allowed without an ACL: the brokers need a super user too
    closed = plan_kraft(_view(), ONE, CONNECT, {ALLOW_EVERYONE: "false"}, None, "s")
    assert closed.controller_user == CONTROLLER_USER
    with pytest.raises(ConfigError, match="secret file"):
        plan_kraft(_view(), CONTROLLERS, CONNECT, HIDDEN)


@pytest.mark.parametrize(
    ("broker", "says"),
    [(_broker(2, ibp="3.8-IV0"), "broker 2 has inter.broker.protocol.version=3.8-IV0"),
     (_broker(2, ibp=None), "inter.broker.protocol.version=unknown"),
     (_broker(2, process_roles="broker", zookeeper_connect=None), "does not run in ZooKeeper"),
     (_broker(2, migration_enabled=True), "already has zookeeper.metadata.migration.enable"),
     (_broker(2, inter_broker_listener="INTERNAL", protocol_map="INTERNAL:PLAINTEXT"),
      "broker 2 uses inter.broker.listener.name=INTERNAL"),
     (_broker(2, protocol_map="PLAINTEXT:TLS"), "is TLS, which is no security protocol"),
     (_broker(2, authorizer="com.example.Custom"), "authorizer.class.name=com.example.Custom")],
)  # fmt: skip
def test_what_the_guide_forbids_is_refused_by_name(broker: BrokerView, says: str) -> None:
    with pytest.raises(ConflictError, match=says.replace(".", r"\.")):
        plan_kraft(_view(_broker(1), broker), CONTROLLERS, CONNECT, HIDDEN)


def test_an_unregistered_broker_or_no_controller_is_refused() -> None:
    view = replace(_view(), registered=(1, 3))
    with pytest.raises(ConflictError, match="broker\\(s\\) 2 not registered"):
        plan_kraft(view, CONTROLLERS, CONNECT, HIDDEN)
    with pytest.raises(ConfigError, match="at least one controller"):
        plan_kraft(_view(), [], CONNECT, HIDDEN)


def _snap(**changes: object) -> Snapshot:
    base = Snapshot(
        topics={"t": {"0": [1, 2], "1": [2, 3]}},
        configs={"t": {"retention.ms": "1000"}},
        acls=["ALLOW User:a READ TOPIC:LITERAL:t from *"],
        groups={"idle": {"t[0]": 5}, "busy": {"t[0]": 7}},
        active=["busy"],
    )
    return replace(base, **changes)


def test_the_metadata_comparison_names_each_change() -> None:
    before = _snap()
    assert differences(before, before) == []
    grown = _snap(groups={"idle": {"t[0]": 5}, "busy": {"t[0]": 9}}, topics={
        "t": {"0": [1, 2], "1": [2, 3]}, "new": {"0": [1]}})  # fmt: skip
    assert differences(before, grown) == []  # a consuming group moves on; new topics are fine
    changed = _snap(
        topics={"t": {"0": [2, 1], "1": [2, 3]}},
        configs={"t": {}},
        acls=[],
        groups={"idle": {"t[0]": 6}, "busy": {"t[0]": 3}},
    )
    assert differences(before, changed) == [
        "t[0]: replicas [1, 2], now [2, 1]",
        "topic t: configs {'retention.ms': '1000'}, now {}",
        "ACL gone: ALLOW User:a READ TOPIC:LITERAL:t from *",
        "group busy: t[0] committed 7, now 3",
        "group idle: t[0] committed 5, now 6",
    ]
    assert differences(before, _snap(topics={}, groups={})) == [
        "topic t is gone", "group busy is gone", "group idle is gone"]  # fmt: skip


def _sasl_view() -> ClusterView:
    secure = {"inter_broker_listener": "SASL_PLAINTEXT", "protocol_map":
              "SASL_PLAINTEXT:SASL_PLAINTEXT", "inter_broker_mechanism": "SCRAM-SHA-512",
              "hidden": (ALLOW_EVERYONE, SUPER_USERS)}  # fmt: skip
    return _view(*(_broker(i, **secure) for i in (1, 2)))


def test_nodes_of_a_sasl_cluster_authenticate_each_other_and_no_password_is_planned() -> None:
    hidden = {ALLOW_EVERYONE: "false", SUPER_USERS: "User:admin"}
    plan = plan_kraft(_sasl_view(), CONTROLLERS, CONNECT, hidden, "admin")
    controller = plan.controller_properties(3000)
    assert controller["listener.security.protocol.map"].endswith("CONTROLLER:SASL_PLAINTEXT")
    assert controller["sasl.mechanism.inter.broker.protocol"] == "SCRAM-SHA-512"
    scram = controller["listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"]
    assert 'username="admin"' in scram and SECRET in scram
    assert controller[SUPER_USERS] == "User:admin"  # nobody added, ANONYMOUS nowhere
    assert "ANONYMOUS" not in plan.to_yaml() and "s3cret" not in plan.to_yaml()
    broker = plan.roll1.revealed("s3cret").applied({"broker.id": "1"})
    assert 'password="s3cret"' in broker["listener.name.controller.plain.sasl.jaas.config"]
    assert SECRET not in str(plan.roll2_for(1).revealed("s3cret").set)
    reverted = plan.revert_roll1().applied(broker)
    assert not any(k.startswith("listener.name.controller") for k in reverted)

    with pytest.raises(ConfigError, match="give kmigrate a SASL user"):
        plan_kraft(_sasl_view(), CONTROLLERS, CONNECT, hidden, None)
    with pytest.raises(ConflictError, match=r"User:client \(SASL\), which is neither a super"):
        plan_kraft(_sasl_view(), CONTROLLERS, CONNECT, hidden, "client")
    kerberos = replace(_sasl_view().brokers[1], inter_broker_mechanism="GSSAPI")
    with pytest.raises(ConflictError, match="with GSSAPI"):
        plan_kraft(_view(_sasl_view().brokers[0], kerberos), CONTROLLERS, CONNECT, hidden, "x")


def test_nodes_of_a_sasl_ssl_cluster_log_in_over_tls() -> None:
    """SASL_SSL between brokers: the controller listener is SASL_SSL, and controllers
    serve it and reach the brokers with the brokers' key and trust stores, so PLAIN's
    password never crosses the network in clear; no client certificate is asked for."""
    tls = {"inter_broker_listener": "SASL_SSL", "protocol_map": "SASL_SSL:SASL_SSL",
           "inter_broker_mechanism": "SCRAM-SHA-512", "hidden": (ALLOW_EVERYONE, SUPER_USERS),
           "ssl_settings": _SSL["ssl_settings"]}  # fmt: skip
    view = _view(*(_broker(i, **tls) for i in (1, 2)))
    hidden = {ALLOW_EVERYONE: "false", SUPER_USERS: "User:admin"}
    plan = plan_kraft(view, CONTROLLERS, CONNECT, hidden, "admin")
    controller = plan.controller_properties(3000)
    assert controller["listener.security.protocol.map"] == "SASL_SSL:SASL_SSL,CONTROLLER:SASL_SSL"
    assert controller["ssl.truststore.location"] == "/tls/ca.pem"
    assert controller["ssl.keystore.location"] == "/tls/broker.pem"
    assert "listener.name.controller.ssl.client.auth" not in controller
    assert "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config" in controller
    who = trust_of(view, 3, hidden, "admin").shape
    assert who == "the controller listener is SASL_SSL; the nodes log in as User:admin"
    migrating = plan.roll1.applied({"listener.security.protocol.map": "SASL_SSL:SASL_SSL"})
    assert migrating["listener.security.protocol.map"].endswith(",CONTROLLER:SASL_SSL")
    locked = _view(*(_broker(i, **tls, ssl_hidden=("ssl.truststore.password",)) for i in (1, 2)))
    with pytest.raises(ConflictError, match=r"sets ssl\.truststore\.password"):
        plan_kraft(locked, CONTROLLERS, CONNECT, hidden, "admin")


def test_quotas_are_compared_once_both_snapshots_read_them() -> None:
    quota = {"user 'alice'": {"producer_byte_rate": "1048576"}}
    read = _snap(quotas=quota, quotas_read=True)
    assert differences(read, _snap(quotas={}, quotas_read=True)) == [
        "quotas of user 'alice': {'producer_byte_rate': '1048576'}, now None"
    ]
    # a snapshot stored before kmigrate read quotas (a migration started then, resumed
    # now): its empty quotas are unknown, not "none"
    stored = Snapshot.from_json(_snap().to_json().replace(', "quotas_read": false', ""))
    assert not stored.quotas_read and differences(stored, read) == []


_SSL = {
    "protocol_map": "SSL:SSL",
    "inter_broker_listener": "SSL",
    "ssl_settings": (("ssl.keystore.type", "PEM"), ("ssl.keystore.location", "/tls/broker.pem"),
                     ("ssl.truststore.type", "PEM"), ("ssl.truststore.location", "/tls/ca.pem")),
}  # fmt: skip
CERTIFICATE = "User:CN=legacy broker"


def test_an_ssl_cluster_s_controllers_present_the_brokers_certificate() -> None:
    """SSL between brokers: the controller listener asks for client certificates and the
    controllers use the brokers' key and trust stores, so brokers and controllers are
    the certificate's principal there; a quorum needs it as a super user of theirs."""
    view = _view(*(_broker(i, **_SSL) for i in (1, 2)))
    plan = plan_kraft(view, CONTROLLERS, CONNECT, HIDDEN, None, None, CERTIFICATE)
    controller = plan.controller_properties(3001)
    assert controller["listener.security.protocol.map"] == "SSL:SSL,CONTROLLER:SSL"
    assert controller["listener.name.controller.ssl.client.auth"] == "required"
    assert controller["ssl.keystore.location"] == "/tls/broker.pem"
    assert controller["ssl.truststore.location"] == "/tls/ca.pem"
    assert controller[SUPER_USERS] == CERTIFICATE and controller[ALLOW_EVERYONE] == "true"
    assert plan.certificate_principal == CERTIFICATE
    assert plan.controller_user is None and not plan.needs_secret
    migrating = plan.roll1.applied({"listener.security.protocol.map": "SSL:SSL"})
    assert migrating["listener.security.protocol.map"] == "SSL:SSL,CONTROLLER:SSL"
    assert not [k for k in plan.roll1.set if k.startswith(("sasl.", "listener.name.", "ssl."))]
    assert parse_plan(plan.to_yaml(), "p.yaml") == plan
    # one controller, everyone allowed where no ACL says: the brokers' rules as they are
    one = plan_kraft(view, ONE, CONNECT, HIDDEN, None, None, CERTIFICATE)
    assert SUPER_USERS not in one.controller_config

    with pytest.raises(ConfigError, match="pass --certificate-principal"):
        plan_kraft(view, CONTROLLERS, CONNECT, HIDDEN)
    locked = _view(*(_broker(i, **_SSL, ssl_hidden=("ssl.keystore.password",)) for i in (1, 2)))
    with pytest.raises(ConflictError, match=r"sets ssl\.keystore\.password"):
        plan_kraft(locked, CONTROLLERS, CONNECT, HIDDEN, None, None, CERTIFICATE)
    other = _broker(2, **{**_SSL, "ssl_settings": (("ssl.keystore.location", "/x.pem"),)})
    with pytest.raises(ConflictError, match=r"differ in their ssl\.keystore"):
        plan_kraft(_view(_broker(1, **_SSL), other), CONTROLLERS, CONNECT, HIDDEN, None, None,
                   CERTIFICATE)  # fmt: skip

"""The ZooKeeper move's pure parts: membership lines, quorum rules, the planner's order
and refusals, the plan file."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmigrate.ensemble_move.members import (
    Member,
    keeps_majority,
    majority,
    parse_config,
    parse_member,
    voters,
)
from kmigrate.ensemble_move.model import EnsembleView, KafkaOnZk
from kmigrate.ensemble_move.plan import parse_plan, plan_move
from kmigrate.ensemble_move.world import chroot_of
from kmigrate.errors import ConfigError, ConflictError
from kmigrate.zookeeper.tree import Znode, digest, first_difference


def _member(node_id: int, role: str = "participant") -> Member:
    port = 20000 + 3 * node_id
    return Member(node_id, "127.0.0.1", port, port + 1, role, "127.0.0.1", port + 2)


def _view(name: str, ids: list[int], root: tuple[str, ...] = ("zookeeper",)) -> EnsembleView:
    members = tuple(_member(i) for i in ids)
    return EnsembleView(
        name,
        ",".join(m.client_address or "" for m in members),
        members,
        "100000000",
        "3.8.4",
        {i: "follower" for i in ids},
        root,
    )


def _kafka(source: EnsembleView, brokers: tuple[int, ...] = (1, 2, 3)) -> KafkaOnZk:
    return KafkaOnZk(
        "legacy", brokers, {b: f"{source.connect}/kafka" for b in brokers}, brokers, brokers[0]
    )


members_st = st.builds(
    Member,
    st.integers(1, 255),
    st.sampled_from(["127.0.0.1", "zk-1.example.com", "10.0.0.7"]),
    st.integers(1, 65535),
    st.integers(1, 65535),
    st.sampled_from(["participant", "observer"]),
    st.sampled_from(["127.0.0.1", "0.0.0.0"]),
    st.integers(1, 65535) | st.none(),
)


@given(members_st)
def test_a_member_line_reads_back_as_the_same_member(member: Member) -> None:
    line = member.line()
    parsed = parse_member(line)
    assert parsed.line() == line
    if member.client_port:
        assert parsed == member


def test_the_config_znode_gives_members_and_version() -> None:
    text = (
        "server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182\n"
        "server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\n"
        "server.9=h:1:2:observer;3\nversion=100000003"
    )
    members, version = parse_config(text)
    assert [m.node_id for m in members] == [1, 2, 9]
    assert version == "100000003"
    assert [m.node_id for m in voters(members)] == [1, 2]
    assert members[2].client_address == "h:3"
    with pytest.raises(ConfigError, match="not a ZooKeeper server line"):
        parse_member("server.x=bad")


@given(st.integers(1, 9), st.integers(0, 9))
def test_a_side_keeps_its_majority_only_with_more_than_half_the_voters(
    own: int, other: int
) -> None:
    assert keeps_majority(own, other) == (own > other)
    assert majority(own + other) * 2 > own + other


@given(st.integers(3, 7), st.integers(1, 7))
def test_join_never_costs_the_source_its_majority_and_every_target_server_joins(
    n_source: int, n_target: int
) -> None:
    source = _view("old", list(range(1, n_source + 1)))
    target = _view("new", list(range(100, 100 + n_target)))
    plan = plan_move(source, target, _kafka(source), "/kafka")
    assert keeps_majority(n_source, len(plan.join_first))
    assert plan.join_first, "at least one target server joins to copy the data"
    assert sorted(plan.join_first + plan.join_after_split) == target.ids
    assert [s.phase for s in plan.steps] == ["join", "check", "switch", "split"]
    assert plan.target_connect == f"{target.connect}/kafka"


def test_the_plan_file_reads_back() -> None:
    source, target = _view("old", [1, 2, 3]), _view("new", [4, 5, 6])
    plan = plan_move(source, target, _kafka(source), "/kafka")
    again = parse_plan(plan.to_yaml("p.yaml"), "p.yaml")
    assert again == plan
    assert (again.join_first, again.join_after_split) == ([4, 5], [6])


@pytest.mark.parametrize(
    ("source", "target", "says"),
    [
        (_view("old", [1, 2, 3]), _view("new", [4, 5, 6], ("zookeeper", "app")), "not empty"),
        (_view("old", [1, 2, 3]), _view("new", [3, 4, 5]), r"server id\(s\) 3 exist in both"),
        (_view("old", [1]), _view("new", [4, 5, 6]), "grow it to 3 first"),
        (_view("old", [1, 2, 3]), _view("new", []), "no dynamic configuration"),
    ],
)
def test_refusals_name_what_to_fix(source: EnsembleView, target: EnsembleView, says: str) -> None:
    with pytest.raises(ConflictError, match=says):
        plan_move(source, target, _kafka(source), "/kafka")


def test_a_server_that_does_not_serve_is_refused() -> None:
    source = _view("old", [1, 2, 3])
    down = EnsembleView(**{**source.__dict__, "modes": {1: "leader", 2: None, 3: "follower"}})
    with pytest.raises(ConflictError, match=r"server\(s\) 2 do not serve"):
        plan_move(down, _view("new", [4, 5, 6]), _kafka(source), "/kafka")


def test_kafka_must_run_on_the_source_under_the_chroot_with_every_broker_registered() -> None:
    source, target = _view("old", [1, 2, 3]), _view("new", [4, 5, 6])
    elsewhere = KafkaOnZk("legacy", (1,), {1: f"{target.connect}/kafka"}, (1,), 1)
    with pytest.raises(ConflictError, match="not the source ensemble 'old'"):
        plan_move(source, target, elsewhere, "/kafka")
    with pytest.raises(ConflictError, match="not the source ensemble"):
        plan_move(source, target, _kafka(source), "/other")
    missing = KafkaOnZk("legacy", (1, 2), {b: f"{source.connect}/kafka" for b in (1, 2)}, (1,), 1)
    with pytest.raises(ConflictError, match=r"broker\(s\) 2 .* not registered"):
        plan_move(source, target, missing, "/kafka")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("kind: [unclosed", "bad YAML"),
        ("kind: kmigrate-migration-plan\n", "not a ZooKeeper move plan"),
        ("kind: kmigrate-zookeeper-move\nkafka: x\n", "field 'chroot'"),
    ],
)
def test_a_malformed_plan_file_is_one_line(text: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says) as raised:
        parse_plan(text, "p.yaml")
    assert "\n" not in str(raised.value)


def test_the_chroot_comes_from_the_brokers_and_a_kraft_cluster_has_none() -> None:
    assert chroot_of({1: "a:1,b:2/kafka", 2: "a:1,b:2/kafka"}) == "/kafka"
    assert chroot_of({1: "a:1/x/y/"}) == "/x/y"
    assert chroot_of({1: "a:1"}) == ""
    with pytest.raises(ConfigError, match="does not run on ZooKeeper"):
        chroot_of({1: "", 2: ""})
    with pytest.raises(ConfigError, match="--chroot"):
        chroot_of({1: "a:1/k1", 2: "a:1/k2"})


znodes_st = st.lists(
    st.builds(
        Znode,
        st.text("abc/", min_size=1, max_size=6).map(lambda p: "/" + p),
        st.binary(max_size=8),
        st.lists(st.sampled_from(["world:anyone:31", "digest:u:1"]), max_size=2).map(
            lambda a: tuple(sorted(a))
        ),
        st.booleans(),
    ),
    unique_by=lambda n: n.path,
    max_size=12,
)


@given(znodes_st)
def test_a_tree_digest_ignores_order_and_sees_any_change(znodes: list[Znode]) -> None:
    same = digest("/", reversed(znodes))
    assert same == digest("/", znodes)
    assert first_difference(znodes, list(reversed(znodes))) is None
    for i, node in enumerate(znodes):
        changed = [*znodes[:i], replace(node, data=node.data + b"!"), *znodes[i + 1 :]]
        assert digest("/", changed).digest != same.digest
        assert first_difference(znodes, changed) == node.path
        fewer = znodes[:i] + znodes[i + 1 :]
        assert digest("/", fewer) != same and first_difference(znodes, fewer) == node.path

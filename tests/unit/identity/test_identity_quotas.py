"""Which quotas a copy writes and how two clusters' quotas differ (pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kmigrate.identity.quotas import differences, number, plan_quotas
from kmigrate.kafka.quotas import ordered
from kmigrate.model.quotas import Entity, entity_text

ALICE: Entity = (("user", "alice"),)
DEFAULT_USER: Entity = (("user", None),)
PAIR: Entity = (("user", "app-1"), ("client-id", "loader"))


def test_a_copy_writes_what_differs_and_leaves_what_only_the_target_has() -> None:
    source = {ALICE: {"producer_byte_rate": 1024.0}, DEFAULT_USER: {"request_percentage": 200.0}}
    target = {
        ALICE: {"producer_byte_rate": 2048.0, "consumer_byte_rate": 10.0},
        DEFAULT_USER: {"request_percentage": 200.0},
        PAIR: {"producer_byte_rate": 5.0},
    }
    plan = plan_quotas(source, target)
    assert plan.writes == {ALICE: {"producer_byte_rate": 1024.0}}
    assert plan.same == [DEFAULT_USER]
    assert plan.only_target == {
        ALICE: {"consumer_byte_rate": 10.0},
        PAIR: {"producer_byte_rate": 5.0},
    }
    assert differences(source, target) == [
        "user 'alice': producer_byte_rate is 1024 on the source, 2048 on the target"
    ]


def test_entities_read_as_kafkas_tools_name_them() -> None:
    assert entity_text(PAIR) == "user 'app-1', client-id 'loader'"
    assert entity_text(DEFAULT_USER) == "user <default>"
    assert ordered((("client-id", "x"), ("user", "u"))) == (("user", "u"), ("client-id", "x"))
    assert number(1048576.0) == "1048576" and number(0.5) == "0.5"


entities = (
    st.lists(st.sampled_from(["user", "client-id", "ip"]), min_size=1, max_size=2, unique=True)
    .flatmap(
        lambda kinds: st.tuples(
            *(st.tuples(st.just(k), st.none() | st.sampled_from("abc")) for k in kinds)
        )
    )
    .map(ordered)
)
quotas = st.dictionaries(
    entities,
    st.dictionaries(
        st.sampled_from(["producer_byte_rate", "consumer_byte_rate", "request_percentage"]),
        st.floats(1, 1e9, allow_nan=False).map(round).map(float),
        min_size=1,
    ),
)


@given(quotas, quotas)
def test_after_the_writes_nothing_differs_and_the_targets_own_values_stay(
    source: dict, target: dict
) -> None:
    plan = plan_quotas(source, target)
    after = {e: dict(v) for e, v in target.items()}
    for entity, values in plan.writes.items():
        after.setdefault(entity, {}).update(values)
    assert differences(source, after) == []
    for entity, values in target.items():
        for key, value in values.items():
            if key not in source.get(entity, {}):
                assert after[entity][key] == value, "a value only the target sets is kept"
    assert plan_quotas(source, after).writes == {}, "a second copy writes nothing"


def test_applied_reads_set_values_and_removed_keys_back_in_any_entity_order() -> None:
    from kmigrate.kafka.quotas import applied

    found = {(("user", "app"), ("client-id", "c")): {"producer_byte_rate": 1024.0}}
    assert applied({(("client-id", "c"), ("user", "app")): {"producer_byte_rate": 1024}}, found)
    assert not applied({(("user", "app"), ("client-id", "c")): {"producer_byte_rate": 2048}}, found)
    assert not applied({(("user", "app"), ("client-id", "c")): {"producer_byte_rate": None}}, found)
    assert applied({(("user", "app"),): {"consumer_byte_rate": None}}, found)
    assert not applied({(("ip", None),): {"connection_creation_rate": 5}}, {})

from hypothesis import given
from hypothesis import strategies as st

from kmigrate.kafka.topic_copy import COPYABLE_TOPIC_CONFIGS, configs_to_copy

PLACEMENT = {
    "leader.replication.throttled.replicas": "*",
    "follower.replication.throttled.replicas": "*",
    "confluent.placement.constraints": "{}",
    "unclean.leader.election.enable": "true",
}


def test_copyable_configs_are_copied_with_their_values():
    source = {"retention.ms": "3600000", "cleanup.policy": "compact", "segment.bytes": "1048576"}
    assert configs_to_copy(source, 3) == source


def test_non_copyable_configs_are_dropped():
    source = {"retention.ms": "1000", **PLACEMENT}
    assert configs_to_copy(source, 3) == {"retention.ms": "1000"}


def test_empty_source_gives_empty_result():
    assert configs_to_copy({}, 3) == {}


def test_placement_and_throttle_configs_are_not_copyable():
    assert not set(PLACEMENT) & COPYABLE_TOPIC_CONFIGS


def test_only_restricts_the_copied_configs():
    source = {"retention.ms": "1000", "cleanup.policy": "compact", "segment.ms": "60000"}
    assert configs_to_copy(source, 3, only=["cleanup.policy"]) == {"cleanup.policy": "compact"}


def test_only_accepts_any_iterable():
    source = {"retention.ms": "1000", "cleanup.policy": "compact"}
    result = configs_to_copy(source, 3, only=(k for k in ["retention.ms"]))
    assert result == {"retention.ms": "1000"}


def test_empty_only_copies_nothing():
    assert configs_to_copy({"retention.ms": "1000"}, 3, only=[]) == {}


def test_only_naming_an_absent_config_adds_nothing():
    assert configs_to_copy({"retention.ms": "1000"}, 3, only=["segment.ms"]) == {}


def test_overrides_replace_copied_values():
    source = {"retention.ms": "1000", "cleanup.policy": "delete"}
    result = configs_to_copy(source, 3, overrides={"retention.ms": "5000"})
    assert result == {"retention.ms": "5000", "cleanup.policy": "delete"}


def test_overrides_are_applied_even_when_not_copyable_or_not_in_only():
    result = configs_to_copy(
        {"retention.ms": "1000"},
        3,
        only=["cleanup.policy"],
        overrides={"unclean.leader.election.enable": "false"},
    )
    assert result == {"unclean.leader.election.enable": "false"}


def test_source_mapping_is_not_modified():
    source = {"min.insync.replicas": "5", "retention.ms": "1"}
    configs_to_copy(source, 2, overrides={"retention.ms": "2"})
    assert source == {"min.insync.replicas": "5", "retention.ms": "1"}


def test_min_insync_replicas_above_replication_factor_is_capped():
    assert configs_to_copy({"min.insync.replicas": "3"}, 2) == {"min.insync.replicas": "2"}


def test_min_insync_replicas_equal_to_replication_factor_is_kept():
    assert configs_to_copy({"min.insync.replicas": "2"}, 2) == {"min.insync.replicas": "2"}


def test_min_insync_replicas_below_replication_factor_is_kept():
    assert configs_to_copy({"min.insync.replicas": "1"}, 3) == {"min.insync.replicas": "1"}


def test_min_insync_replicas_from_an_override_is_capped_too():
    result = configs_to_copy({}, 1, overrides={"min.insync.replicas": "3"})
    assert result == {"min.insync.replicas": "1"}


def test_min_insync_replicas_excluded_by_only_is_not_added():
    result = configs_to_copy(
        {"min.insync.replicas": "3", "retention.ms": "1"}, 1, only=["retention.ms"]
    )
    assert result == {"retention.ms": "1"}


# ------------------------------------------------------------------ properties

_OTHER_KEYS = st.sampled_from(
    sorted(COPYABLE_TOPIC_CONFIGS - {"min.insync.replicas"} | set(PLACEMENT) | {"x.custom"})
)
_VALUES = st.text(alphabet="abc0123456789.", max_size=6)
_MIN_ISR = st.integers(min_value=1, max_value=20).map(str)


@st.composite
def _config_maps(draw):
    configs = draw(st.dictionaries(_OTHER_KEYS, _VALUES, max_size=8))
    if draw(st.booleans()):
        configs["min.insync.replicas"] = draw(_MIN_ISR)
    return configs


@given(
    source=_config_maps(),
    replication_factor=st.integers(min_value=1, max_value=10),
    only=st.none() | st.lists(_OTHER_KEYS | st.just("min.insync.replicas"), max_size=6),
    overrides=st.none() | _config_maps(),
)
def test_result_is_bounded_by_allowed_keys_overrides_and_replication_factor(
    source, replication_factor, only, overrides
):
    result = configs_to_copy(source, replication_factor, only=only, overrides=overrides)

    allowed = COPYABLE_TOPIC_CONFIGS if only is None else set(only)
    overrides = overrides or {}
    for key, value in result.items():
        assert key in overrides or (key in allowed and key in source)
        if key != "min.insync.replicas":
            assert value == overrides.get(key, source.get(key))
    if "min.insync.replicas" in result:
        assert int(result["min.insync.replicas"]) <= replication_factor
        expected = int(overrides.get("min.insync.replicas", source.get("min.insync.replicas")))
        assert int(result["min.insync.replicas"]) == min(expected, replication_factor)


@given(
    source=_config_maps(),
    replication_factor=st.integers(min_value=1, max_value=10),
    overrides=st.none() | _config_maps(),
)
def test_every_allowed_source_config_and_every_override_is_kept(
    source, replication_factor, overrides
):
    result = configs_to_copy(source, replication_factor, overrides=overrides)
    expected_keys = {k for k in source if k in COPYABLE_TOPIC_CONFIGS} | set(overrides or {})
    assert set(result) == expected_keys

"""Principal maps: exact rules, regex rules, drops, and what they do to user quotas."""

from __future__ import annotations

import pytest

from kmigrate.errors import ConfigError
from kmigrate.identity.principals import parse_map
from kmigrate.identity.quotas import remapped

MAP = """
principals:
  - from: "User:alice"
    to: "User:alice@CORP.EXAMPLE"
  - match: "User:(svc-.*)"
    to: "User:\\\\1@CORP.EXAMPLE"
  - from: "User:legacy"
    to: null
  - from: "User:robot"
    to: "Group:robots"
"""


def test_the_first_matching_rule_renames_and_the_rest_stay() -> None:
    m = parse_map(MAP, "map.yaml")
    assert m.apply("User:alice") == "User:alice@CORP.EXAMPLE"
    assert m.apply("User:svc-orders") == "User:svc-orders@CORP.EXAMPLE"
    assert m.apply("User:legacy") is None
    assert m.apply("User:bob") == "User:bob"
    assert m.apply("User:*") == "User:*", "the wildcard stays the wildcard"


def test_user_quotas_follow_the_map_and_what_it_cannot_name_is_listed() -> None:
    m = parse_map(MAP, "map.yaml")
    source = {
        (("user", "alice"),): {"producer_byte_rate": 1.0},
        (("user", "svc-a"), ("client-id", "x")): {"request_percentage": 50.0},
        (("user", None),): {"consumer_byte_rate": 2.0},
        (("user", "legacy"),): {"producer_byte_rate": 3.0},
        (("user", "robot"),): {"producer_byte_rate": 4.0},
        (("client-id", "c"),): {"producer_byte_rate": 5.0},
    }
    out, lost = remapped(source, m)
    assert set(out) == {
        (("user", "alice@CORP.EXAMPLE"),),
        (("user", "svc-a@CORP.EXAMPLE"), ("client-id", "x")),
        (("user", None),),
        (("client-id", "c"),),
    }
    assert [line.split(":")[0] for line in lost] == ["user 'legacy'", "user 'robot'"]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("principals: [{from: 'User:a', match: 'x', to: 'User:b'}]", "either 'from'"),
        ("principals: [{from: 'alice', to: 'User:b'}]", "'alice' is not a principal"),
        ("principals: [{match: '(', to: 'User:b'}]", "principals.0.match: not a regex"),
        ("principals: [{from: 'User:a', to: 'User:b', extra: 1}]", "principals.0.extra"),
        ("- just a list", "not a principal map"),
    ],
)
def test_a_bad_map_is_one_line_naming_the_rule(text: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_map(text, "map.yaml")
    assert says in caught.value.message and caught.value.message.startswith("map.yaml")

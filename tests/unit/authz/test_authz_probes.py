"""The authorization probes (pure): chosen from the cluster's own ACLs, a few per kind,
always side-effect free, and a changed answer named."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kmigrate.authz.probes import MAX_PER_KIND, PROBE_NAME, Probe, choose, differences
from kmigrate.model.cluster import AclEntry


def _acl(kind: str, name: str, pattern: str = "LITERAL", op: str = "READ") -> AclEntry:
    return AclEntry(kind, name, pattern, "User:alice", "*", op, "DENY")


def test_the_resources_the_acls_name_are_probed_with_what_they_decide() -> None:
    acls = [_acl("TOPIC", "guarded", op="ALTER_CONFIGS"), _acl("TOPIC", "team-", "PREFIXED"),
            _acl("GROUP", "billing"), _acl("TOPIC", "*")]  # fmt: skip
    probes = choose(acls, ["guarded", "team-a", "open", "__consumer_offsets"])
    assert set(probes) == {
        Probe("alter-config", "guarded"), Probe("describe-configs", "guarded"),
        Probe("create-topic", "team-" + PROBE_NAME), Probe("alter-config", "team-a"),
        Probe("alter-config", "open"), Probe("describe-configs", "open"),  # no ACL names it
        Probe("create-topic", PROBE_NAME), Probe("describe-group", "billing"),
        Probe("describe-group", PROBE_NAME), Probe("describe-acls", ""),
    }  # fmt: skip
    assert probes == sorted(probes)


@given(st.lists(st.text("abcxyz-", min_size=1, max_size=6), max_size=40))
def test_a_few_probes_per_kind_however_many_acls(names: list[str]) -> None:
    acls = [_acl("TOPIC", n) for n in names] + [_acl("GROUP", n, "PREFIXED") for n in names]
    probes = choose(acls, names)
    assert len(probes) <= 4 * MAX_PER_KIND + 6
    assert {p.action for p in probes} <= {
        "alter-config", "describe-configs", "create-topic", "describe-group", "describe-acls"
    }  # fmt: skip
    assert not any(p.action == "create-topic" and p.resource in names for p in probes)


def test_a_changed_answer_is_named_and_a_missing_one_is_not_compared() -> None:
    before = {
        "User:ANONYMOUS: alter-config t": "denied (TOPIC_AUTHORIZATION_FAILED)",
        "User:ANONYMOUS: describe-acls": "allowed",
        "User:x: describe-group g": "allowed",
    }
    after = {**before, "User:ANONYMOUS: alter-config t": "allowed"}
    del after["User:x: describe-group g"]  # fmt: skip
    assert differences(before, after) == [
        "User:ANONYMOUS: alter-config t: was denied (TOPIC_AUTHORIZATION_FAILED), now allowed"
    ]
